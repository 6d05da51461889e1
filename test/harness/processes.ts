import { tmpdir } from "node:os";
import { messageTopology, type OrderEvent, streamsOf } from "@commerce/shared/contract/messages";
import { signPayload } from "@commerce/shared/contract/signature";
import type { NatsCredentials } from "@commerce/shared/platform/config";
import { createLogger } from "@commerce/shared/platform/logger";
import { NatsLink } from "@commerce/shared/platform/nats";
import type { StoredMsg } from "nats";
import postgres from "postgres";
import {
  eventually,
  freePort,
  jwtSecret,
  signToken,
  testDatabaseUrl,
  testNatsUrl,
  unique,
  webhookSecret,
} from "./basics";
import { root, type ServiceName, ServiceProcess, serviceCommand } from "./launch";

export { type ServiceName, ServiceProcess };

/** Set E2E_BINARIES=1 to run the compiled dist/ binaries instead of the sources. */
const useBinaries = process.env.E2E_BINARIES === "1";

/** One service of a test stack: its output kept in memory for the test to read. */
const serviceProcess = (name: ServiceName, port: number, env: Record<string, string>) =>
  new ServiceProcess({
    name,
    port,
    command: serviceCommand(name, useBinaries),
    // A binary runs from elsewhere, so whatever it serves must be inside it (Swagger UI's assets).
    cwd: useBinaries ? tmpdir() : root,
    env,
  });

/**
 * Both services as real processes on free ports, against the real PostgreSQL and NATS (or the
 * private ones a fault test passes in), with their own NATS names (NATS_PREFIX) so several stacks
 * and test files never share messages. `env` adds to or overrides the services' environment,
 * `serviceEnv` one service's (e.g. its own NATS user); `natsCredentials` are the test's own.
 * `prefix: ""` uses the deployment's names, for a private nats-server that has no other stack.
 * `linkConsole` points the api's console at payments and lets it through payments' CORS (U1).
 */
export async function startStack({
  start = ["api", "payments"] as ServiceName[],
  natsUrl = testNatsUrl,
  natsCredentials = undefined as NatsCredentials | undefined,
  databaseUrl = testDatabaseUrl,
  prefix = unique("e"),
  env: extraEnv = {} as Record<string, string>,
  serviceEnv = {} as Partial<Record<ServiceName, Record<string, string>>>,
  linkConsole = false,
} = {}) {
  const stackEnv = {
    DATABASE_URL: databaseUrl,
    NATS_URL: natsUrl,
    NATS_PREFIX: prefix,
    AUTH_JWT_SECRET: jwtSecret,
    PAYMENT_WEBHOOK_SECRETS: webhookSecret,
    RATE_LIMIT_RPS: "0",
    // N5's limits are off: the stack's one customer places as many orders as a test needs.
    HOLD_MAX_ORDERS: "0",
    HOLD_MAX_UNITS: "0",
    LOG_LEVEL: "warn",
    ...extraEnv,
  };
  const [apiPort, paymentsPort] = [await freePort(), await freePort()];
  // U1: the console on the api's origin reads payments' operator routes from the browser.
  const consoleEnv: Record<ServiceName, Record<string, string>> = linkConsole
    ? {
        api: { PAYMENTS_PUBLIC_URL: `http://127.0.0.1:${paymentsPort}` },
        payments: { CONSOLE_ORIGINS: `http://127.0.0.1:${apiPort}` },
      }
    : { api: {}, payments: {} };
  const api = serviceProcess("api", apiPort, {
    ...stackEnv,
    ...consoleEnv.api,
    ...serviceEnv.api,
  });
  const payments = serviceProcess("payments", paymentsPort, {
    ...stackEnv,
    ...consoleEnv.payments,
    ...serviceEnv.payments,
  });
  const services = { api, payments };
  const replicas: ServiceProcess[] = [];
  for (const name of start) await services[name].start();
  const topology = messageTopology(prefix);
  const nats = new NatsLink(
    natsUrl,
    "e2e",
    createLogger("error", {}, () => {}),
    undefined,
    natsCredentials,
    // N1: a user of deploy/nats-auth.conf receives replies only under its own inbox prefix.
    natsCredentials && "user" in natsCredentials ? `_INBOX_${natsCredentials.user}` : undefined,
  );
  await nats.start();
  const sql = postgres(databaseUrl, { max: 4, onnotice: () => {} });
  const admin = await signToken(unique("admin"), "admin");
  const customer = await signToken(unique("cust"));

  const callApi = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await fetch(`${api.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as any };
  };

  const orderStatus = async (id: number): Promise<string | undefined> =>
    (await sql`select status from api.orders where id = ${id}`)[0]?.status;

  /** Every orders.paid message JetStream holds for this stack, read in one pass. */
  const readOrdersPaid = async (): Promise<OrderEvent[]> => {
    const jsm = await nats.manager();
    const { state } = await jsm.streams.info(topology.orders.stream);
    const found: OrderEvent[] = [];
    for (let seq = state.first_seq; state.messages > 0 && seq <= state.last_seq; seq++) {
      const message = await jsm.streams
        .getMessage(topology.orders.stream, { seq })
        .catch(() => undefined);
      if (message?.subject === topology.orders.event("paid"))
        found.push(message.json<OrderEvent>());
    }
    return found;
  };
  // Right after a NATS restart the test's own connection may time out a request: read again.
  const allOrdersPaidMessages = () =>
    eventually(() => readOrdersPaid().catch(() => undefined), 30_000, "the ORDERS stream");

  return {
    ...services,
    topology,
    nats,
    sql,
    admin,
    customer,
    callApi,
    orderStatus,

    /** A product of its own and one order for it, placed by the stack's customer. */
    async newOrder(price = 1999, qty = 1): Promise<PlacedOrder> {
      const product = await callApi("POST", "/api/products", admin, {
        name: "Lamp",
        price,
        category: unique("c"),
      });
      const order = await callApi("POST", "/api/orders", customer, {
        product_id: product.json.id,
        qty,
      });
      // Said at once, not later as an order id that is undefined.
      if (product.status !== 201 || order.status !== 201)
        throw new Error(
          `newOrder: product ${product.status}, order ${order.status} ${JSON.stringify(order.json)}`,
        );
      return order.json;
    },

    /** Signs and sends a notification as the provider would; `headers` adds to the request's. */
    async notify(
      body: object,
      {
        secret = webhookSecret,
        at = Math.floor(Date.now() / 1000),
        headers = {} as Record<string, string>,
      } = {},
    ) {
      const raw = JSON.stringify(body);
      const res = await fetch(`${payments.url}/api/webhooks/payment`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-signature": signPayload(raw, secret, at),
          ...headers,
        },
        body: raw,
      });
      return { status: res.status, headers: res.headers, json: (await res.json()) as any };
    },

    /** Every message a stream of this stack holds, with its headers. */
    async storedMessages(stream: string): Promise<StoredMsg[]> {
      const jsm = await nats.manager();
      const { state } = await jsm.streams.info(stream);
      const found: StoredMsg[] = [];
      for (let seq = state.first_seq; state.messages > 0 && seq <= state.last_seq; seq++) {
        const message = await jsm.streams.getMessage(stream, { seq }).catch(() => undefined);
        if (message) found.push(message);
      }
      return found;
    },

    paid: (id: number, timeoutMs = 10_000) =>
      eventually(
        async () => ((await orderStatus(id)) === "paid" ? true : undefined),
        timeoutMs,
        `order ${id} paid`,
      ),

    /** The orders.paid messages JetStream holds for one order (R5: there must be exactly one). */
    async ordersPaidMessages(orderId: number): Promise<OrderEvent[]> {
      return (await allOrdersPaidMessages()).filter((m) => m.order_id === orderId);
    },

    allOrdersPaidMessages,

    /**
     * The orders.paid messages for one order, once at least one is there: the relay publishes
     * right after the move commits, so a test that saw the order paid may be a moment early.
     */
    async publishedOrdersPaid(orderId: number, timeoutMs = 10_000): Promise<OrderEvent[]> {
      return eventually(
        async () => {
          const found = (await allOrdersPaidMessages()).filter((m) => m.order_id === orderId);
          return found.length ? found : undefined;
        },
        timeoutMs,
        `orders.paid of order ${orderId}`,
      );
    },

    /** One more process of a service with the stack's settings (plus `env`), e.g. an api replica. */
    async replica(name: ServiceName, env: Record<string, string> = {}): Promise<ServiceProcess> {
      const replica = serviceProcess(name, await freePort(), {
        ...stackEnv,
        ...serviceEnv[name],
        ...env,
      });
      replicas.push(replica);
      await replica.start();
      return replica;
    },

    async stop() {
      await Promise.all([api, payments, ...replicas].map((service) => service.stop()));
      const jsm = await nats.manager();
      for (const stream of streamsOf(topology))
        await jsm.streams.delete(stream.name).catch(() => {});
      await nats.close();
      await sql.end({ timeout: 5 });
    },
  };
}

export type PlacedOrder = { order_id: number; amount: number; currency: string };

/** A `payment.succeeded` notification that pays `order` in full. */
export const succeeded = (order: PlacedOrder, extra = {}) => ({
  event: "payment.succeeded",
  order_id: order.order_id,
  amount: order.amount,
  currency: order.currency,
  id: unique("evt"),
  ...extra,
});
export type Stack = Awaited<ReturnType<typeof startStack>>;

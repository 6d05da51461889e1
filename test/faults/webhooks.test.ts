import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { apiClient } from "@commerce/client";
import { eventually } from "@commerce/testing/basics";
import type { PrivateNats } from "@commerce/testing/nats-server";
import { loopbackWebhooks, webhookEndpoints } from "@commerce/testing/webhook-endpoints";
import { type Answer, type Received, verifyDelivery } from "@commerce/testing/webhook-receiver";
import { faultStackForFile, placeOrders } from "./support";

setDefaultTimeout(150_000);

const env = await faultStackForFile({
  env: {
    ...loopbackWebhooks,
    WEBHOOK_RETRY_SCHEDULE: "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1",
    WEBHOOK_TIMEOUT_SECONDS: "2",
  },
});

// Each test's endpoint goes (its deliveries with it), so `deliveries()` reads the next test's only.
const hooks = webhookEndpoints(() => env.stack.sql);
afterEach(() => hooks.clear());

async function subscribe(
  answer: (request: Received, n: number) => Answer,
  apiUrl = env.stack.api.url,
) {
  const receiver = await hooks.receiver(answer);
  // Through the typed client (D3): the webhook routes are typed from the app like the others.
  const client = apiClient(apiUrl, env.stack.admin);
  const { data, status } = await client.api["webhook-endpoints"].post({
    url: receiver.url,
    events: ["*"],
  });
  hooks.kept({ status, json: data });
  expect(status).toBe(201);
  if (!data) throw new Error("no endpoint");
  return { receiver, endpoint: data };
}

const deliveries = () =>
  env.stack.sql<{ message_id: string; status: string; attempts: number }[]>`
    select message_id, status, attempts from api.webhook_deliveries`;

describe("webhooks under faults", () => {
  test("H6: an api SIGKILLed mid-attempt sends the delivery again after restart, with the same webhook-id", async () => {
    const { stack } = env;
    const { receiver, endpoint } = await subscribe((_, n) =>
      n === 1 ? { hang: true } : { status: 200 },
    );
    const [order] = await placeOrders(stack, 1);
    await eventually(async () => (receiver.received.length === 1 ? true : undefined), 10_000);

    await stack.api.stop("SIGKILL");
    await stack.api.start();
    await eventually(
      async () => (receiver.received.length === 2 ? true : undefined),
      30_000,
      "the attempt again after the lease expired",
    );
    const [killed, again] = receiver.received;
    expect(again.id).toBe(killed.id);
    expect(again.id).toBe(`order-created-${order.order_id}`);
    expect(verifyDelivery(endpoint.secret, again)).toMatchObject({ type: "orders.created" });
    const [row] = await eventually(async () => {
      const rows = await deliveries();
      return rows[0]?.status === "succeeded" ? rows : undefined;
    });
    // The killed attempt never reached the log; the one after the restart did.
    expect(row.attempts).toBe(1);
    const client = apiClient(stack.api.url, stack.admin);
    const log = await client.api["webhook-endpoints"]({ id: endpoint.id }).deliveries.get({
      query: { status: "succeeded" },
    });
    expect(log.data?.items.map((d) => d.message_id)).toEqual([killed.id]);
  });

  test("O7, H6: SIGTERM while an attempt hangs on a receiver: the api still exits 0 within 10 s, leaving the attempt to its lease", async () => {
    const { stack } = env;
    expect(await stack.api.stop()).toBe(0);
    // A replica whose attempts may last 30 s: longer than a shutdown may take.
    const patient = await stack.replica("api", { WEBHOOK_TIMEOUT_SECONDS: "30" });
    try {
      const { receiver } = await subscribe(() => ({ hang: true }), patient.url);
      const product = await apiClient(patient.url, stack.admin).api.products.post({
        name: "Lamp",
        price: 1999,
        category: "webhook-faults",
      });
      const order = await apiClient(patient.url, stack.customer).api.orders.post({
        product_id: product.data?.id ?? 0,
        qty: 1,
      });
      expect(order.status).toBe(201);
      await eventually(async () => (receiver.received.length === 1 ? true : undefined), 10_000);
      const stopping = performance.now();
      expect(await patient.stop()).toBe(0);
      expect(performance.now() - stopping).toBeLessThan(10_000);
      const [row] = await deliveries();
      expect(row.status).toBe("pending");
    } finally {
      await patient.stop();
      await stack.api.start();
    }
  });

  test("H6: NATS and PostgreSQL briefly down while deliveries are due: every event delivered, none twice under another id, none lost", async () => {
    const { stack, postgres } = env;
    const nats = env.nats as PrivateNats;
    let up = false;
    const { receiver, endpoint } = await subscribe(() => (up ? { status: 200 } : { status: 503 }));
    const orders = await placeOrders(stack, 20);
    const expected = new Set(orders.map((o) => `order-created-${o.order_id}`));
    await eventually(async () => (receiver.received.length >= 20 ? true : undefined), 15_000);

    // Deliveries do not need NATS; with PostgreSQL gone they wait, and none is lost.
    await nats.stop();
    await postgres.stop();
    await Bun.sleep(1500);
    await postgres.start();
    await nats.start();
    up = true;

    await eventually(
      async () => {
        const rows = await deliveries().catch(() => []);
        return rows.length === 20 && rows.every((r) => r.status === "succeeded") ? rows : undefined;
      },
      60_000,
      "every delivery to succeed",
    );
    const ids = new Set(receiver.received.map((r) => r.id));
    expect(ids).toEqual(expected);
    for (const request of receiver.received)
      expect(verifyDelivery(endpoint.secret, request)).toMatchObject({ type: "orders.created" });
  });
});

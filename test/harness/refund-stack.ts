import { afterAll } from "bun:test";
import { streamsOf } from "@commerce/shared/contract/messages";
import { loadConfig as loadApiConfig } from "../../services/api/src/config";
import { createService as createApiService } from "../../services/api/src/create-service";
import { loadConfig as loadPaymentsConfig } from "../../services/payments/src/config";
import { createService as createPaymentsService } from "../../services/payments/src/create-service";
import type { AdyenReportOptions } from "../../services/payments/src/modules/reconciliation/adyen-report";
import type { RefundWorkerOptions } from "../../services/payments/src/modules/refunds/worker";
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
import {
  adyenBatch,
  adyenItem,
  adyenRequest,
  paymentIntent,
  providersEnv,
  signedItem,
  stripeEvent,
  stripeRequest,
} from "./provider-requests";
import { startAdyenApi } from "./providers/adyen-api";
import { startStripeApi } from "./providers/stripe-api";

/** A refund as GET /api/orders/{id}/refunds lists it. */
export type ListedRefund = {
  refund_id: number;
  status: string;
  amount: number;
  provider_refund_id: string | null;
  failure_reason: string | null;
};

export type RefundStackOptions = {
  /** The refund worker's schedule: short back-offs by default, so retries happen within a test. */
  refunds?: RefundWorkerOptions & { giveUpAfterMs?: number; callTimeoutMs?: number };
  /** More environment for both services. */
  env?: Record<string, string>;
  /** B1: the Adyen report worker's schedule and limits. */
  adyenReports?: AdyenReportOptions;
};

/**
 * Both services built by their `createService` and started in this process (listening on free
 * ports, NATS, relays and consumers running), against the real PostgreSQL and NATS, with the
 * local Stripe and Adyen API servers (providers/) as STRIPE_API_URL and ADYEN_CHECKOUT_URL, and
 * Adyen's REFUND notifications sent to payments' route. Refunds go the whole way: the api's
 * outbox, JetStream, the payments worker, the provider's library, back through JetStream.
 */
export async function startRefundStack({
  refunds = {},
  env = {},
  adyenReports,
}: RefundStackOptions = {}) {
  const stripeApi = await startStripeApi();
  const adyenApi = await startAdyenApi();
  const [apiPort, paymentsPort] = [await freePort(), await freePort()];
  const common = {
    DATABASE_URL: testDatabaseUrl,
    NATS_URL: testNatsUrl,
    NATS_PREFIX: unique("r"),
    AUTH_JWT_SECRET: jwtSecret,
    PAYMENT_WEBHOOK_SECRETS: webhookSecret,
    RATE_LIMIT_RPS: "0",
    HOLD_MAX_ORDERS: "0",
    HOLD_MAX_UNITS: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    ...providersEnv,
    STRIPE_API_KEY: stripeApi.apiKey,
    STRIPE_API_URL: stripeApi.url,
    ADYEN_API_KEY: adyenApi.apiKey,
    ADYEN_CHECKOUT_URL: adyenApi.checkoutUrl,
    ...env,
  };
  const apiLog: string[] = [];
  const paymentsLog: string[] = [];
  const api = await createApiService(loadApiConfig({ ...common, PORT: String(apiPort) }), {
    logSink: (line) => apiLog.push(line),
  });
  const payments = await createPaymentsService(
    loadPaymentsConfig({ ...common, PORT: String(paymentsPort) }),
    {
      logSink: (line) => paymentsLog.push(line),
      refunds: { retryBaseMs: 50, retryMaxMs: 400, intervalMs: 100, ...refunds },
      adyenReports,
    },
  );
  api.start();
  payments.start();
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const paymentsUrl = `http://127.0.0.1:${paymentsPort}`;
  adyenApi.webhookUrl = `${paymentsUrl}/api/webhooks/adyen`;
  stripeApi.webhookUrl = `${paymentsUrl}/api/webhooks/stripe`;
  const sql = api.deps.sql;
  const admin = await signToken(unique("admin"), "admin");
  const customer = await signToken(unique("cust"));

  const call = async (
    method: string,
    path: string,
    { token = admin, body, headers = {} as Record<string, string> } = {} as {
      token?: string;
      body?: unknown;
      headers?: Record<string, string>;
    },
  ) => {
    const response = await fetch(`${apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      json: text ? JSON.parse(text) : undefined,
    };
  };

  const deliver = async (request: Request | Promise<Request>) => {
    const built = await request;
    const response = await fetch(`${paymentsUrl}${new URL(built.url).pathname}`, {
      method: "POST",
      headers: built.headers,
      body: await built.text(),
    });
    return response.status;
  };

  /** An order of `amount` cents placed by the stack's customer (a product of its own). */
  async function placeOrder(amount: number) {
    const product = await call("POST", "/api/products", {
      body: { name: "Lamp", price: amount, category: unique("c") },
    });
    const order = await call("POST", "/api/orders", {
      token: customer,
      body: { product_id: product.json.id, qty: 1 },
    });
    if (order.status !== 201) throw new Error(`order not placed: ${order.status}`);
    return order.json.order_id as number;
  }

  const statusOf = async (orderId: number) =>
    (await sql`select status from api.orders where id = ${orderId}`)[0]?.status as string;

  const paidBecomes = (orderId: number) =>
    eventually(
      async () => ((await statusOf(orderId)) === "paid" ? true : undefined),
      15_000,
      `order ${orderId} paid`,
    );

  return {
    api,
    payments,
    apiUrl,
    paymentsUrl,
    stripeApi,
    adyenApi,
    sql,
    admin,
    customer,
    call,
    apiLog,
    paymentsLog,
    topology: api.deps.topology,
    statusOf,
    deliver,
    paidBecomes,

    /** A paid order whose payment is a PaymentIntent the local Stripe holds. */
    async paidThroughStripe(amount = 1999) {
      const orderId = await placeOrder(amount);
      const intent = stripeApi.paymentIntent(amount, "usd", orderId);
      const event = stripeEvent(
        "payment_intent.succeeded",
        paymentIntent(orderId, { id: intent.id, amount, amount_received: amount }),
      );
      if ((await deliver(stripeRequest(event))) !== 200) throw new Error("Stripe event refused");
      await paidBecomes(orderId);
      return { orderId, paymentRef: intent.id, amount };
    },

    /** A paid order whose payment is one the local Adyen holds (AUTHORISATION notification). */
    async paidThroughAdyen(amount = 1999) {
      const orderId = await placeOrder(amount);
      const payment = adyenApi.payment(amount, "USD", orderId);
      const item = signedItem(
        adyenItem(orderId, {
          pspReference: payment.pspReference,
          amount: { currency: "USD", value: amount },
        }),
      );
      if ((await deliver(adyenRequest(adyenBatch([item])))) !== 200)
        throw new Error("Adyen notification refused");
      await paidBecomes(orderId);
      return { orderId, paymentRef: payment.pspReference, amount };
    },

    /** A paid order paid through the generic provider (the seed's signed notification). */
    async paidThroughGeneric(amount = 1999) {
      const { signPayload } = await import("@commerce/shared/contract/signature");
      const orderId = await placeOrder(amount);
      const raw = JSON.stringify({
        event: "payment.succeeded",
        order_id: orderId,
        amount,
        currency: "USD",
        id: unique("evt"),
      });
      await fetch(`${paymentsUrl}/api/webhooks/payment`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-signature": signPayload(raw, webhookSecret, Math.floor(Date.now() / 1000)),
        },
        body: raw,
      });
      await paidBecomes(orderId);
      return { orderId, amount };
    },

    placeOrder,

    /** Another api on the same database and NATS names (M4), for replicas racing; stop it after. */
    async apiReplica() {
      const port = await freePort();
      const replica = await createApiService(loadApiConfig({ ...common, PORT: String(port) }), {
        logSink: (line) => apiLog.push(line),
      });
      replica.start();
      const url = `http://127.0.0.1:${port}`;
      await eventually(
        async () => ((await fetch(`${url}/health`).catch(() => undefined))?.ok ? true : undefined),
        15_000,
        "the api replica",
      );
      return { url, stop: () => replica.stop() };
    },

    /** Another payments on the same database and NATS names (B1: replicas racing); stop it after. */
    async paymentsReplica() {
      const port = await freePort();
      const replica = await createPaymentsService(
        loadPaymentsConfig({ ...common, PORT: String(port) }),
        {
          logSink: (line) => paymentsLog.push(line),
          refunds: { retryBaseMs: 50, retryMaxMs: 400, intervalMs: 100, ...refunds },
        },
      );
      replica.start();
      return { service: replica, stop: () => replica.stop() };
    },

    /** The order's refunds as the api lists them. */
    refunds: async (orderId: number) =>
      (await call("GET", `/api/orders/${orderId}/refunds`)).json.items as ListedRefund[],

    /** Waits until `refundId` has `status` in the api, and answers it. */
    async refundBecomes(orderId: number, refundId: number, status: string, timeoutMs = 15_000) {
      return eventually(
        async () => {
          const items = (await call("GET", `/api/orders/${orderId}/refunds`)).json
            .items as ListedRefund[];
          const found = items.find((r) => r.refund_id === refundId);
          return found?.status === status ? found : undefined;
        },
        timeoutMs,
        `refund ${refundId} ${status}`,
      );
    },

    async stop() {
      const jsm = await api.nats.manager().catch(() => undefined);
      for (const stream of streamsOf(api.deps.topology))
        await jsm?.streams.delete(stream.name).catch(() => {});
      await payments.stop();
      await api.stop();
      await stripeApi.stop();
      await adyenApi.stop();
    },
  };
}

export type RefundStack = Awaited<ReturnType<typeof startRefundStack>>;

/** A refund stack for the calling test file, stopped after its tests. */
export async function refundStackForFile(options: RefundStackOptions = {}) {
  const stack = await startRefundStack(options);
  afterAll(() => stack.stop());
  return stack;
}

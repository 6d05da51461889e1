import { headerOf, ProviderServer, randomId } from "./provider-server";

export const stripeApiKey = "sk_test_local_stripe_api_key_0123456789";

type Refund = {
  id: string;
  object: "refund";
  amount: number;
  balance_transaction: string | null;
  charge: string;
  created: number;
  currency: string;
  metadata: Record<string, string>;
  payment_intent: string;
  reason: string | null;
  status: "pending" | "succeeded" | "failed" | "canceled";
  failure_reason?: string;
};

type PaymentIntent = {
  id: string;
  object: "payment_intent";
  amount: number;
  amount_received: number;
  currency: string;
  latest_charge: string;
  metadata: Record<string, string>;
  status: "succeeded";
  livemode: false;
};

const stripeError = (status: number, error: Record<string, unknown>) => ({
  status,
  body: { error },
  headers: { "request-id": randomId("req") },
});

/** `metadata[order_id]=7` and the like, as Stripe's form encoding sends them. */
function formOf(body: string) {
  const params = new URLSearchParams(body);
  const metadata: Record<string, string> = {};
  const fields: Record<string, string> = {};
  for (const [key, value] of params) {
    const nested = /^metadata\[(.+)\]$/.exec(key);
    if (nested) metadata[nested[1]] = value;
    else fields[key] = value;
  }
  return { fields, metadata };
}

/**
 * A local server that answers as Stripe's API does for what the shop calls (F2, B5): PaymentIntents
 * made by the test (`paymentIntent`), `POST /v1/refunds` (by `payment_intent`, optional `amount`,
 * never more than is left; `charge_already_refunded` once all is), `GET /v1/refunds/:id`. It
 * keeps idempotency keys as Stripe does (per API key; the first executed answer replayed, a stored
 * 500 included, with `Idempotent-Replayed`; another request under the key 400 `idempotency_error`,
 * a concurrent one 409) and takes faults for the next refund requests (`fail`). Refunds are
 * `succeeded` at once unless `refundStatus` says `pending`; `settle` moves one later. The
 * `stripe` library reaches it through `host`, `port` and `protocol` (STRIPE_API_URL).
 */
export async function startStripeApi({ apiKey = stripeApiKey } = {}) {
  const intents = new Map<string, PaymentIntent>();
  const refunds = new Map<string, Refund>();
  const state = { refundStatus: "succeeded" as Refund["status"] };

  const refundedOf = (intent: string) =>
    [...refunds.values()]
      .filter(
        (r) => r.payment_intent === intent && r.status !== "failed" && r.status !== "canceled",
      )
      .reduce((sum, r) => sum + r.amount, 0);

  const server = new ProviderServer(
    ({ method, path, body, headers }) => {
      if (headerOf(headers, "authorization") !== `Bearer ${apiKey}`)
        return stripeError(401, {
          type: "invalid_request_error",
          message: "Invalid API Key provided",
        });
      const refundPath = /^\/v1\/refunds\/([^/]+)$/.exec(path);
      if (method === "GET" && refundPath) {
        const refund = refunds.get(refundPath[1]);
        return refund
          ? { status: 200, body: refund, headers: { "request-id": randomId("req") } }
          : stripeError(404, {
              type: "invalid_request_error",
              code: "resource_missing",
              message: `No such refund: '${refundPath[1]}'`,
              param: "id",
            });
      }
      if (method !== "POST" || path !== "/v1/refunds") return undefined;
      const { fields, metadata } = formOf(body);
      const intent = intents.get(fields.payment_intent ?? "");
      if (!intent)
        return stripeError(400, {
          type: "invalid_request_error",
          code: "resource_missing",
          message: `No such payment_intent: '${fields.payment_intent}'`,
          param: "payment_intent",
        });
      const left = intent.amount_received - refundedOf(intent.id);
      if (left <= 0)
        return stripeError(400, {
          type: "invalid_request_error",
          code: "charge_already_refunded",
          message: `Charge ${intent.latest_charge} has already been refunded.`,
        });
      const amount = fields.amount === undefined ? left : Number(fields.amount);
      if (!Number.isSafeInteger(amount) || amount <= 0 || amount > left)
        return stripeError(400, {
          type: "invalid_request_error",
          code: "amount_too_large",
          message: `Refund amount (${amount}) is greater than unrefunded amount on charge (${left})`,
          param: "amount",
        });
      const refund: Refund = {
        id: randomId("re"),
        object: "refund",
        amount,
        balance_transaction: randomId("txn"),
        charge: intent.latest_charge,
        created: Math.floor(Date.now() / 1000),
        currency: intent.currency,
        metadata,
        payment_intent: intent.id,
        reason: fields.reason ?? null,
        status: state.refundStatus,
      };
      refunds.set(refund.id, refund);
      return { status: 200, body: refund, headers: { "request-id": randomId("req") } };
    },
    {
      credentialOf: (headers) => headerOf(headers, "authorization"),
      keyMisuse: (what) =>
        stripeError(what === "in_progress" ? 409 : 400, {
          type: "idempotency_error",
          message:
            what === "in_progress"
              ? "There is currently another in-progress request using this Stripe API key and idempotency key. Please try again later."
              : "Keys for idempotent requests can only be used with the same parameters they were first used with.",
        }),
      moves: (path) => path === "/v1/refunds",
    },
  );
  await server.start();

  return {
    server,
    url: server.url,
    apiKey,
    /** A captured PaymentIntent for `amount` (minor units) of `currency`, as a payment made it. */
    paymentIntent(amount: number, currency = "usd", orderId?: number, id = randomId("pi")) {
      const intent: PaymentIntent = {
        id,
        object: "payment_intent",
        amount,
        amount_received: amount,
        currency: currency.toLowerCase(),
        latest_charge: randomId("ch"),
        metadata: orderId === undefined ? {} : { order_id: String(orderId) },
        status: "succeeded",
        livemode: false,
      };
      intents.set(intent.id, intent);
      return intent;
    },
    /** Every PaymentIntent Stripe holds: its id and the amount received. */
    payments: () => [...intents.values()].map((i) => [i.id, i.amount_received] as const),
    /** Every PaymentIntent Stripe holds, as made. */
    paymentList: () => [...intents.values()],
    /** Every refund Stripe holds, optionally of one PaymentIntent. */
    refunds: (paymentIntent?: string) =>
      [...refunds.values()].filter((r) => !paymentIntent || r.payment_intent === paymentIntent),
    /** What a new refund's status is: `succeeded` (cards, mostly) or `pending`. */
    set refundStatus(status: Refund["status"]) {
      state.refundStatus = status;
    },
    /** A pending refund's later outcome, as Stripe's `refund.updated` would report it. */
    settle(refundId: string, status: "succeeded" | "failed", failureReason?: string) {
      const refund = refunds.get(refundId);
      if (!refund) throw new Error(`no refund ${refundId}`);
      refund.status = status;
      if (failureReason) refund.failure_reason = failureReason;
    },
    fail: server.fail.bind(server),
    /** A refund made in Stripe's dashboard, not by the shop. */
    refundElsewhere(paymentIntent: string, amount: number) {
      const intent = intents.get(paymentIntent);
      if (!intent) throw new Error(`no PaymentIntent ${paymentIntent}`);
      const refund: Refund = {
        id: randomId("re"),
        object: "refund",
        amount,
        balance_transaction: randomId("txn"),
        charge: intent.latest_charge,
        created: Math.floor(Date.now() / 1000),
        currency: intent.currency,
        metadata: {},
        payment_intent: intent.id,
        reason: null,
        status: "succeeded",
      };
      refunds.set(refund.id, refund);
      return refund;
    },
    /** The `POST /v1/refunds` requests seen, with their idempotency keys. */
    refundRequests: () => server.moves(),
    stop: () => server.stop(),
  };
}

export type StripeApi = Awaited<ReturnType<typeof startStripeApi>>;

import { paymentIntent as intentBody, stripeRequest } from "../provider-requests";
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
  created: number;
  currency: string;
  latest_charge: string;
  metadata: Record<string, string>;
  status: "succeeded";
  livemode: boolean;
};

type Dispute = {
  id: string;
  object: "dispute";
  amount: number;
  charge: string;
  created: number;
  currency: string;
  livemode: boolean;
  metadata: Record<string, string>;
  payment_intent: string;
  reason: string;
  status: "needs_response" | "under_review" | "won" | "lost";
};

/** An event as Stripe keeps it (B1): listed by `GET /v1/events` for 30 days. */
type StripeEventRecord = {
  id: string;
  object: "event";
  api_version: string;
  created: number;
  data: { object: unknown };
  livemode: boolean;
  pending_webhooks: number;
  type: string;
  account?: string;
  /** Whether its webhook reached the endpoint (the list's `delivery_success` filter). */
  delivery_success: boolean;
};

/**
 * B1, B5: how a payment's event reaches the shop: `sent` (created and delivered to `webhookUrl`),
 * `unsent` (created, its webhook never delivered: `delivery_success` false), `none` (Stripe never
 * created the event: only an object sweep finds the payment).
 */
export type Delivery = "sent" | "unsent" | "none";

/** B4: a fault every list request meets until cleared (down), or the next ones (queued). */
export type ListFault = ({ kind: "status"; status: number } | { kind: "timeout"; ms?: number }) & {
  /** Only a request for a later page (`starting_after`) meets it: a run fails halfway. */
  laterPage?: boolean;
  /** Only a request of this list (e.g. `/v1/events`). */
  path?: string;
};

/** What a list item may be made of: a real object, or whatever a test injects (bad input). */
type Listed = { id?: unknown; created?: unknown } & Record<string, unknown>;

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
 *
 * B1, B5: it keeps events as Stripe does, each with `delivery_success`: `pay` makes a payment
 * whose event is sent to `webhookUrl` (signed by Stripe's library), created and never delivered,
 * or never created; a refund makes an undelivered `charge.refunded`; `dispute` a dispute. It lists
 * `GET /v1/events` (`created[gte]`, `types[]`, `delivery_success`), `/v1/payment_intents`,
 * `/v1/refunds` and `/v1/disputes` (`created[gte]`/`[lte]`), newest first, `limit`,
 * `starting_after`, `has_more`; `GET /v1/payment_intents/:id`. List faults: `down` (every list
 * request 5xx or hanging until `up`), `failLists` (the next ones, or only a later page), bad input
 * at the head of a page (`inject`), pages longer than asked (`ignoreLimit`) or shorter (`maxPage`).
 */
export async function startStripeApi({ apiKey = stripeApiKey } = {}) {
  const intents = new Map<string, PaymentIntent>();
  const refunds = new Map<string, Refund>();
  const disputes = new Map<string, Dispute>();
  const events: StripeEventRecord[] = [];
  const state: {
    refundStatus: Refund["status"];
    webhookUrl?: string;
    down?: ListFault;
    listFaults: ListFault[];
    /** Raw items put at the head of the next list page of a path (malformed, foreign). */
    injected: Map<string, unknown[]>;
    /** A page larger than asked (a huge page): every item, whatever `limit` said. */
    ignoreLimit: boolean;
    /** Pages shorter than asked (Stripe may answer fewer than `limit`), so a run has several. */
    maxPage?: number;
    listRequests: { path: string; query: string; at: number }[];
  } = {
    refundStatus: "succeeded",
    listFaults: [],
    injected: new Map(),
    ignoreLimit: false,
    listRequests: [],
  };
  const now = () => Math.floor(Date.now() / 1000);

  /** B1: records an event; `sent` delivers it, signed by Stripe's library, to `webhookUrl`. */
  async function emit(
    type: string,
    object: unknown,
    delivery: Delivery,
    extra: Partial<StripeEventRecord> = {},
  ): Promise<StripeEventRecord | undefined> {
    if (delivery === "none") return undefined;
    const event: StripeEventRecord = {
      id: randomId("evt"),
      object: "event",
      api_version: "2025-09-30.clover",
      created: now(),
      data: { object: structuredClone(object) },
      livemode: false,
      pending_webhooks: delivery === "sent" ? 1 : 0,
      type,
      delivery_success: false,
      ...extra,
    };
    events.push(event);
    if (delivery === "sent") {
      if (!state.webhookUrl) throw new Error("webhookUrl is not set");
      const { delivery_success: _, ...body } = event;
      const request = await stripeRequest(body);
      // An endpoint that is down or refuses leaves the event undelivered (Stripe retries later).
      const response = await fetch(state.webhookUrl, {
        method: "POST",
        headers: request.headers,
        body: await request.text(),
      }).catch(() => undefined);
      await response?.text();
      event.delivery_success = response?.ok ?? false;
      event.pending_webhooks = response?.ok ? 0 : 1;
    }
    return event;
  }

  /**
   * A Stripe list answer (`GET /v1/<things>`): newest first, `created[gte]`, `limit` (default
   * 10, at most 100), `starting_after`, `has_more`, as Stripe's API pages.
   */
  function listOf(path: string, items: Listed[], query: URLSearchParams) {
    const gte = Number(query.get("created[gte]") ?? 0);
    const lte = Number(query.get("created[lte]") ?? Number.POSITIVE_INFINITY);
    const limit = Math.min(100, Math.max(1, Number(query.get("limit") ?? 10)));
    const sorted = items
      .map((item, order) => ({ item, order }))
      .filter(({ item }) => Number(item.created) >= gte && Number(item.created) <= lte)
      .sort((a, b) => Number(b.item.created) - Number(a.item.created) || b.order - a.order)
      .map(({ item }) => item);
    const after = query.get("starting_after");
    const from = after ? sorted.findIndex((item) => item.id === after) + 1 : 0;
    const rest = sorted.slice(from);
    const page = state.ignoreLimit ? rest : rest.slice(0, Math.min(limit, state.maxPage ?? limit));
    const injected = state.injected.get(path) ?? [];
    state.injected.delete(path);
    return {
      status: 200,
      body: {
        object: "list",
        url: path,
        has_more: page.length < rest.length,
        data: [...injected, ...page],
      },
      headers: { "request-id": randomId("req") },
    };
  }

  /** B4: the fault a list request meets, if any (its answer, or a hang past the caller's timeout). */
  async function listFault(
    path: string,
    query: URLSearchParams,
  ): Promise<ReturnType<typeof stripeError> | undefined> {
    const queued = state.listFaults.findIndex(
      (f) => (!f.laterPage || query.has("starting_after")) && (!f.path || f.path === path),
    );
    const fault = state.down ?? (queued >= 0 ? state.listFaults.splice(queued, 1)[0] : undefined);
    if (!fault) return undefined;
    if (fault.kind === "timeout") await Bun.sleep(fault.ms ?? 60_000);
    const status = fault.kind === "status" ? fault.status : 503;
    return stripeError(status, { type: "api_error", message: `Injected fault: ${status}` });
  }

  const refundedOf = (intent: string) =>
    [...refunds.values()]
      .filter(
        (r) => r.payment_intent === intent && r.status !== "failed" && r.status !== "canceled",
      )
      .reduce((sum, r) => sum + r.amount, 0);

  const server = new ProviderServer(
    async ({ method, path, query, body, headers }) => {
      if (headerOf(headers, "authorization") !== `Bearer ${apiKey}`)
        return stripeError(401, {
          type: "invalid_request_error",
          message: "Invalid API Key provided",
        });
      const lists: Record<string, () => Listed[]> = {
        "/v1/events": () =>
          events
            .filter((e) => {
              const types = query.getAll("types[]");
              const delivered = query.get("delivery_success");
              return (
                (types.length === 0 || types.includes(e.type)) &&
                (delivered === null || String(e.delivery_success) === delivered)
              );
            })
            .map(({ delivery_success: _, ...event }) => event),
        "/v1/payment_intents": () => [...intents.values()],
        "/v1/refunds": () => [...refunds.values()],
        "/v1/disputes": () => [...disputes.values()],
      };
      if (method === "GET" && lists[path]) {
        state.listRequests.push({ path, query: query.toString(), at: Date.now() });
        return (await listFault(path, query)) ?? listOf(path, lists[path](), query);
      }
      const intentPath = /^\/v1\/payment_intents\/([^/]+)$/.exec(path);
      if (method === "GET" && intentPath) {
        const intent = intents.get(intentPath[1]);
        if (intent)
          return { status: 200, body: intent, headers: { "request-id": randomId("req") } };
        return stripeError(404, {
          type: "invalid_request_error",
          code: "resource_missing",
          message: `No such payment_intent: '${intentPath[1]}'`,
          param: "id",
        });
      }
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
      // Stripe tells of it with charge.refunded; this server never delivers that one itself.
      if (refund.status === "succeeded") void emitRefunded(intent, "unsent");
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

  /** `charge.refunded`: the charge with all that was refunded of it so far (S3). */
  const emitRefunded = (intent: PaymentIntent, delivery: Delivery) =>
    emit(
      "charge.refunded",
      {
        id: intent.latest_charge,
        object: "charge",
        amount: intent.amount_received,
        amount_refunded: refundedOf(intent.id),
        currency: intent.currency,
        livemode: intent.livemode,
        metadata: intent.metadata,
        payment_intent: intent.id,
        refunded: refundedOf(intent.id) >= intent.amount_received,
      },
      delivery,
    );

  /** A PaymentIntent; one of a connected account (`listed` false) is not in the shop's lists. */
  function newIntent(
    amount: number,
    currency: string,
    orderId?: number,
    livemode = false,
    listed = true,
  ) {
    const intent: PaymentIntent = {
      id: randomId("pi"),
      object: "payment_intent",
      amount,
      amount_received: amount,
      created: now(),
      currency: currency.toLowerCase(),
      latest_charge: randomId("ch"),
      metadata: orderId === undefined ? {} : { order_id: String(orderId) },
      status: "succeeded",
      livemode,
    };
    if (listed) intents.set(intent.id, intent);
    return intent;
  }

  return {
    server,
    url: server.url,
    apiKey,
    /** A captured PaymentIntent for `amount` (minor units) of `currency`, as a payment made it. */
    paymentIntent(amount: number, currency = "usd", orderId?: number) {
      return newIntent(amount, currency, orderId);
    },
    /** Where `sent` events are delivered: payments' `/api/webhooks/stripe`. */
    set webhookUrl(url: string) {
      state.webhookUrl = url;
    },
    /**
     * B5: a payment of `orderId` made now, its `payment_intent.succeeded` event `sent` as a
     * webhook, `unsent` (created, never delivered) or `none` (never created). `livemode` true
     * is money of the other mode; `account` an event of another (connected) account.
     */
    async pay(
      orderId: number,
      amount: number,
      delivery: Delivery,
      {
        currency = "usd",
        livemode = false,
        account,
      }: {
        currency?: string;
        livemode?: boolean;
        account?: string;
      } = {},
    ) {
      const intent = newIntent(amount, currency, orderId, livemode, account === undefined);
      const body = intentBody(orderId, {
        ...intent,
        created: intent.created,
        livemode,
      });
      const event = await emit("payment_intent.succeeded", body, delivery, {
        livemode,
        ...(account ? { account } : {}),
      });
      return { intent, event };
    },
    /** B1: a dispute of a payment, its `charge.dispute.created` delivered as `delivery` says. */
    async dispute(paymentIntent: string, delivery: Delivery) {
      const intent = intents.get(paymentIntent);
      if (!intent) throw new Error(`no PaymentIntent ${paymentIntent}`);
      const dispute: Dispute = {
        id: randomId("dp"),
        object: "dispute",
        amount: intent.amount_received,
        charge: intent.latest_charge,
        created: now(),
        currency: intent.currency,
        livemode: intent.livemode,
        metadata: {},
        payment_intent: intent.id,
        reason: "fraudulent",
        status: "needs_response",
      };
      disputes.set(dispute.id, dispute);
      await emit("charge.dispute.created", dispute, delivery);
      return dispute;
    },
    /** Every event Stripe holds, newest last, with `delivery_success`. */
    events: () => [...events],
    /** B4: every list request fails this way until `up()`: Stripe's API is down or hangs. */
    down(fault: ListFault = { kind: "status", status: 503 }) {
      state.down = fault;
    },
    up() {
      state.down = undefined;
    },
    /** B4: the next list requests meet these faults, one each. */
    failLists: (...faults: ListFault[]) => state.listFaults.push(...faults),
    /** B1 bad input: raw items at the head of the next page of `path` (e.g. `/v1/events`). */
    inject(path: string, ...items: unknown[]) {
      state.injected.set(path, [...(state.injected.get(path) ?? []), ...items]);
    },
    /** Pages of at most `n` items (undefined: as `limit` asks). */
    set maxPage(n: number | undefined) {
      state.maxPage = n;
    },
    /** B1 bad input: pages larger than the `limit` asked. */
    set ignoreLimit(on: boolean) {
      state.ignoreLimit = on;
    },
    /** The list requests seen (path, query), oldest first. */
    listRequests: () => [...state.listRequests],
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
    /** A refund made in Stripe's dashboard, not by the shop; its charge.refunded as `delivery` says. */
    async refundElsewhere(paymentIntent: string, amount: number, delivery: Delivery = "none") {
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
      await emitRefunded(intent, delivery);
      return refund;
    },
    /** The `POST /v1/refunds` requests seen, with their idempotency keys. */
    refundRequests: () => server.moves(),
    stop: () => server.stop(),
  };
}

export type StripeApi = Awaited<ReturnType<typeof startStripeApi>>;

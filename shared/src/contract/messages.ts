import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";

/**
 * What the two services agree on over NATS JetStream (docs/behaviour.md, "Messages"): streams,
 * subjects, consumer name, payloads and message ids. A prefix gives tests their own streams.
 */
export function messageTopology(prefix = "") {
  const p = prefix ? `${prefix.toLowerCase()}.` : "";
  const P = prefix ? `${prefix.toUpperCase()}_` : "";
  return {
    payments: {
      stream: `${P}PAYMENTS`,
      subjects: [`${p}payments.>`],
      /** Every payment event the api applies. */
      order: `${p}payments.order.>`,
      orderPaid: `${p}payments.order.paid`,
      orderRefunded: `${p}payments.order.refunded`,
      orderFailed: `${p}payments.order.failed`,
      /** L5: a dispute or chargeback of a payment, at one of its stages. */
      orderDisputed: `${p}payments.order.disputed`,
      /** F2, F3: where a refund the shop asked for stands at its provider (`refundOutcome`). */
      refundOutcome: `${p}payments.order.refund_outcome`,
    },
    orders: {
      stream: `${P}ORDERS`,
      subjects: [`${p}orders.>`],
      /** `orders.created`, `orders.paid`, ...: one subject per order event. */
      event: (event: OrderEventName) => `${p}orders.${event}`,
    },
    paymentEventsConsumer: `${P}api-payment-events`.replaceAll("_", "-"),
    /** F2: the payments service's durable consumer of `orders.refund_requested`. */
    refundRequestsConsumer: `${P}payments-refund-requests`.replaceAll("_", "-"),
    /**
     * B2: payments asks the api (request/reply, core NATS) which of its published notification
     * ids the api has applied; outside both streams, so no stream keeps the question.
     */
    appliedQuery: `${p}payment-inbox.applied`,
    /**
     * F1: the api asks payments (request/reply, core NATS) which providers it refunds through;
     * outside both streams.
     */
    refundProvidersQuery: `${p}refund-providers.configured`,
  };
}

export type MessageTopology = ReturnType<typeof messageTopology>;

const id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
const amount = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const currency = Type.String({ pattern: "^[A-Z]{3}$" });
const timestamp = Type.String({ minLength: 1, description: "ISO 8601, UTC" });

/** The notification events payments turns into messages, and the subject each goes to (M1). */
export const paymentEvents = {
  "payment.succeeded": "orderPaid",
  "payment.refunded": "orderRefunded",
  "payment.failed": "orderFailed",
  /** L5: Stripe's and Adyen's disputes and chargebacks; the generic format has none. */
  "payment.disputed": "orderDisputed",
} as const;
export type PaymentEvent = keyof typeof paymentEvents;

/** L5: where a dispute (chargeback) stands: opened, then won (the money came back) or lost. */
export const disputeStages = ["opened", "won", "lost"] as const;
export type DisputeStage = (typeof disputeStages)[number];

/** G1: the providers whose notifications payments accepts. */
export const paymentProviders = ["generic", "stripe", "adyen"] as const;
export type PaymentProviderName = (typeof paymentProviders)[number];

/**
 * B1, B3: how a notification reached payments: sent by its provider (`webhook`), or found by a
 * reconciliation run (an event never delivered, a state no event explained, a report's line).
 */
export const notificationSources = ["webhook", "reconciliation"] as const;
export type NotificationSource = (typeof notificationSources)[number];

const providerPrefix = /^(?:generic|stripe|adyen):/;

/**
 * G5: a notification's identity across providers: its provider and its id, as one text that is
 * the message's `notification_id`, its `Nats-Msg-Id` and the api's processed-notification key. A
 * generic id is kept as it is (every stored generic notification keeps its key), unless it starts
 * with a provider's prefix, which only that provider may use (`generic:` is put before it);
 * another provider's id gets `<provider>:` before it, unless it already has it (Adyen's
 * `adyen:<eventCode>:<pspReference>:<success>`). No two (provider, id) pairs share a key.
 */
export function notificationKey(provider: string, id: string): string {
  if (provider === "generic") return providerPrefix.test(id) ? `generic:${id}` : id;
  return id.startsWith(`${provider}:`) ? id : `${provider}:${id}`;
}

/**
 * M1: `payments.order.paid`, `.refunded` and `.failed`, one per accepted notification of those
 * events. The subject says which; the payload is the same for all three. `provider` and
 * `payment_ref` are optional only for messages published before M1 named them: a consumer reads
 * their absence as `generic` and the notification id.
 */
export const paymentMessage = Type.Object({
  notification_id: Type.String({ minLength: 1, maxLength: 255 }),
  order_id: id,
  amount,
  currency,
  received_at: timestamp,
  provider: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
  /** The provider's id of the payment: two notifications about one payment share it (L4). */
  payment_ref: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  /** B3: present only for a notification a reconciliation run found; absent = a webhook's. */
  source: Type.Optional(Type.Literal("reconciliation")),
});
export type PaymentMessage = Static<typeof paymentMessage>;

/**
 * L5: `payments.order.disputed`, M1's fields and the dispute's `stage`. A provider's dispute names
 * the payment (`payment_ref`), not always the order: `order_id` is present when the provider's
 * notification named one; the api finds the order that payment paid.
 */
export const disputeMessage = Type.Object({
  ...paymentMessage.properties,
  order_id: Type.Optional(id),
  provider: Type.String({ minLength: 1, maxLength: 50 }),
  payment_ref: Type.String({ minLength: 1, maxLength: 255 }),
  stage: Type.Union(disputeStages.map((stage) => Type.Literal(stage))),
});
export type DisputeMessage = Static<typeof disputeMessage>;

export const orderEventNames = [
  "created",
  "paid",
  "cancelled",
  "refunded",
  "payment_failed",
  "disputed",
  /** F2: an admin asked for a refund through the payment's provider. */
  "refund_requested",
  /** F3: the provider refused a refund the shop asked for. */
  "refund_failed",
] as const;
export type OrderEventName = (typeof orderEventNames)[number];

/** Who or what caused an order event (T1's `source`). */
export const eventSources = [
  "api",
  "webhook",
  "manual",
  "expiry",
  "review",
  /** B3: a notification payments found by reconciliation, not by its webhook. */
  "reconciliation",
] as const;
export type EventSource = (typeof eventSources)[number];

const literals = <T extends string>(values: readonly T[]) =>
  Type.Union(values.map((value) => Type.Literal(value)));

/** M3: one line of the order in an `orders.*` payload, as it was ordered. */
export const orderEventItem = Type.Object({
  product_id: id,
  name: Type.String(),
  qty: Type.Integer({ minimum: 1 }),
  unit_price: amount,
});

/**
 * M3: `orders.<event>`, written by the api in the transaction of the move it announces (R5).
 * `orders.paid` also carries `paid_at`; every event carries the order's `customer_id` and `items`
 * (so a shop system knows what to ship and to whom), and a manual move or a review the admin's
 * `actor`. `customer_id` and `items` are optional only for messages written before M3 named them.
 */
export const orderEvent = Type.Object({
  order_id: id,
  status: literals(["created", "paid", "cancelled", "refunded"]),
  amount,
  currency,
  at: timestamp,
  source: literals(eventSources),
  reason: Type.Optional(Type.String()),
  notification_id: Type.Optional(Type.String()),
  paid_at: Type.Optional(timestamp),
  customer_id: Type.Optional(Type.String()),
  items: Type.Optional(Type.Array(orderEventItem)),
  /** V5: the admin's token `sub`, for a manual move or an applied review. */
  actor: Type.Optional(Type.String()),
  /** L5: `orders.disputed` only. */
  stage: Type.Optional(literals(disputeStages)),
  /** F2–F4: the refund a `refund_requested`, `refund_failed` or `refunded` event is about. */
  refund_id: Type.Optional(id),
  /** F4: all the order's refunds the provider made, after this one (`orders.refunded`). */
  refunded_amount: Type.Optional(amount),
  /** F2: the payment a refund returns, and its provider. */
  payment_ref: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  provider: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
});
export type OrderEvent = Static<typeof orderEvent>;

/**
 * F2: `orders.refund_requested`, what the payments service needs to ask the provider: M3's fields
 * with `amount` the refund's (not the order's), the refund's id, and the payment it returns.
 */
export const refundRequestMessage = Type.Object({
  ...orderEvent.properties,
  refund_id: id,
  amount: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  payment_ref: Type.String({ minLength: 1, maxLength: 255 }),
  provider: Type.String({ minLength: 1, maxLength: 50 }),
});
export type RefundRequestMessage = Static<typeof refundRequestMessage>;

/** F3: where a refund stands at its provider, as payments last learnt it. */
export const refundStatuses = ["pending", "succeeded", "failed", "unknown"] as const;
export type RefundOutcomeStatus = (typeof refundStatuses)[number];

/**
 * F2, F3: `payments.order.refund_outcome`, one per refund and status (message id
 * `refund-<refund_id>-<status>`): `pending` (the provider took it; Adyen's `received`),
 * `succeeded` or `failed` (the provider's word), `unknown` (no definite answer within
 * REFUND_GIVE_UP_HOURS: a person looks).
 */
export const refundOutcomeMessage = Type.Object({
  refund_id: id,
  order_id: id,
  status: literals(refundStatuses),
  amount,
  currency,
  provider: Type.String({ minLength: 1, maxLength: 50 }),
  payment_ref: Type.String({ minLength: 1, maxLength: 255 }),
  provider_refund_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  failure_reason: Type.Optional(Type.String({ maxLength: 1000 })),
  at: timestamp,
});
export type RefundOutcomeMessage = Static<typeof refundOutcomeMessage>;

/** A compiled check of one message schema: the payload typed, or undefined (a poison message). */
function messageParser<T extends TSchema>(schema: T) {
  const check = TypeCompiler.Compile(schema);
  return (data: unknown): Static<T> | undefined => (check.Check(data) ? data : undefined);
}

export const parsePaymentMessage = messageParser(paymentMessage);
export const parseDisputeMessage = messageParser(disputeMessage);
export const parseOrderEvent = messageParser(orderEvent);
export const parseRefundRequest = messageParser(refundRequestMessage);
export const parseRefundOutcome = messageParser(refundOutcomeMessage);

/**
 * The stream each service declares and keeps up to date (N1): the payments service `PAYMENTS`,
 * the api `ORDERS`. Neither may change the other's; the api waits for `PAYMENTS` to exist.
 */
export const ownStreamOf = (topology: MessageTopology, service: "api" | "payments") =>
  service === "payments"
    ? { name: topology.payments.stream, subjects: topology.payments.subjects }
    : { name: topology.orders.stream, subjects: topology.orders.subjects };

/** Both streams, for tests and tools that set up or remove a whole topology. */
export const streamsOf = (topology: MessageTopology) => [
  { name: topology.payments.stream, subjects: topology.payments.subjects },
  { name: topology.orders.stream, subjects: topology.orders.subjects },
];

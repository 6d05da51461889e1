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
      orderPaid: `${p}payments.order.paid`,
    },
    orders: {
      stream: `${P}ORDERS`,
      subjects: [`${p}orders.>`],
      paid: `${p}orders.paid`,
    },
    orderPaidConsumer: `${P}api-order-paid`.replaceAll("_", "-"),
  };
}

export type MessageTopology = ReturnType<typeof messageTopology>;

const id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
const amount = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const currency = Type.String({ pattern: "^[A-Z]{3}$" });
const timestamp = Type.String({ minLength: 1, description: "ISO 8601, UTC" });

/** M1: published by payments for each accepted `payment.succeeded` notification. */
export const paymentOrderPaid = Type.Object({
  notification_id: Type.String({ minLength: 1, maxLength: 255 }),
  order_id: id,
  amount,
  currency,
  received_at: timestamp,
});
export type PaymentOrderPaid = Static<typeof paymentOrderPaid>;

/** M3: published by the api for each `created -> paid` move, whatever caused it (R5). */
export const ordersPaid = Type.Object({
  order_id: id,
  amount,
  currency,
  paid_at: timestamp,
  source: Type.Union([Type.Literal("webhook"), Type.Literal("manual")]),
});
export type OrdersPaid = Static<typeof ordersPaid>;

export const orderPaidMessageId = (orderId: number) => `order-paid-${orderId}`;

/** A compiled check of one message schema: the payload typed, or undefined (a poison message). */
function messageParser<T extends TSchema>(schema: T) {
  const check = TypeCompiler.Compile(schema);
  return (data: unknown): Static<T> | undefined => (check.Check(data) ? data : undefined);
}

export const parsePaymentOrderPaid = messageParser(paymentOrderPaid);
export const parseOrdersPaid = messageParser(ordersPaid);

/** Both services declare both streams identically, so whichever starts first creates them. */
export const streamsOf = (topology: MessageTopology) => [
  { name: topology.payments.stream, subjects: topology.payments.subjects },
  { name: topology.orders.stream, subjects: topology.orders.subjects },
];

/**
 * What the two services agree on over NATS JetStream (CONTRACT section 9): streams, subjects,
 * consumer name, payloads and message ids. A prefix gives tests their own streams.
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

/** M1: published by payments for each accepted `payment.succeeded` notification. */
export type PaymentOrderPaid = {
  notification_id: string;
  order_id: number;
  amount: number;
  currency: string;
  received_at: string;
};

/** M3: published by the api for each `created -> paid` move, whatever caused it (R5). */
export type OrdersPaid = {
  order_id: number;
  amount: number;
  currency: string;
  paid_at: string;
  source: "webhook" | "manual";
};

export const orderPaidMessageId = (orderId: number) => `order-paid-${orderId}`;

const isInt = (v: unknown): v is number => Number.isSafeInteger(v);

/** Checks a consumed payload's shape; anything else is a poison message, not a retry. */
export function parsePaymentOrderPaid(data: unknown): PaymentOrderPaid | undefined {
  if (typeof data !== "object" || data === null) return undefined;
  const m = data as Record<string, unknown>;
  if (
    typeof m.notification_id === "string" &&
    m.notification_id.length > 0 &&
    isInt(m.order_id) &&
    m.order_id > 0 &&
    isInt(m.amount) &&
    m.amount >= 0 &&
    typeof m.currency === "string" &&
    typeof m.received_at === "string"
  )
    return {
      notification_id: m.notification_id,
      order_id: m.order_id,
      amount: m.amount,
      currency: m.currency,
      received_at: m.received_at,
    };
  return undefined;
}

/** Both services declare both streams identically, so whichever starts first creates them. */
export const streamsOf = (topology: MessageTopology) => [
  { name: topology.payments.stream, subjects: topology.payments.subjects },
  { name: topology.orders.stream, subjects: topology.orders.subjects },
];

import { ConflictError, NotFoundError } from "@commerce/shared/errors";
import {
  type EventSource,
  type MessageTopology,
  type OrderEvent,
  type OrderEventName,
  orderEventMessageId,
} from "@commerce/shared/messages";
import { formatTraceparent, type TraceContext } from "@commerce/shared/tracing";
import { and, eq, gte, isNotNull, sql } from "drizzle-orm";
import type { Executor } from "../../db";
import { type CancelReason, orderEvents, orders, outbox, products } from "../../db/schema";
import { preparedStatements } from "../../lib/prepared";
import type { Order, OrderStatus } from "./model";
import { type ItemRow, itemsOf, orderRow, toOrder } from "./order-rows";

/**
 * L1, the order's state machine: for each status, the statuses it may move to and what may cause
 * each move. `api` is a customer's own request, `manual` an admin's, `review` an admin applying
 * a payment review, `webhook` a payment message, `expiry` the api's own sweeper.
 */
const moves: Record<OrderStatus, Partial<Record<OrderStatus, readonly EventSource[]>>> = {
  created: { paid: ["webhook", "manual", "review"], cancelled: ["api", "manual", "expiry"] },
  paid: { refunded: ["webhook", "manual", "review"] },
  cancelled: { paid: ["review"] },
  refunded: {},
};

export type Move = {
  to: OrderStatus;
  source: EventSource;
  reason?: CancelReason;
  notificationId?: string;
  /** O8: the trace the move belongs to; its `orders.*` message continues it. */
  trace?: TraceContext;
};

export type MoveResult = { order: Order; moved: boolean };

const movedAt = {
  paid: "paidAt",
  cancelled: "cancelledAt",
  refunded: "refundedAt",
} as const;

/**
 * The one function that moves an order (L1, R4, R5). It locks the order, answers an order
 * already in the wanted status unchanged, refuses a move L1 does not allow (409 naming both
 * states), gives stock back on cancel and takes it again for a cancelled order being paid, and
 * writes the move's one `orders.*` event in the caller's transaction.
 */
export async function transition(
  tx: Executor,
  topology: MessageTopology,
  orderId: number,
  move: Move,
): Promise<MoveResult> {
  const current = await orderRow(tx, orderId, { lock: true });
  if (!current) throw new NotFoundError(`Order ${orderId} does not exist`);
  const items = await itemsOf(tx, orderId);
  if (current.status === move.to) return { order: toOrder(current, items), moved: false };
  if (!moves[current.status][move.to]?.includes(move.source))
    throw new ConflictError(
      `Order ${orderId} is ${current.status}; it cannot become ${move.to}${
        moves[current.status][move.to] ? ` this way (${move.source})` : ""
      }`,
    );

  if (current.status === "created" && move.to === "cancelled") await giveStockBack(tx, items);
  if (current.status === "cancelled" && move.to === "paid") {
    const short = await takeStock(tx, items);
    if (short.length)
      throw new ConflictError(
        `Order ${orderId} cannot be paid again: too little stock is left`,
        short.map((i) => ({ path: `/items/${i}/qty`, message: "not enough stock left" })),
      );
  }

  const [row] = await tx
    .update(orders)
    .set({
      status: move.to,
      [movedAt[move.to as keyof typeof movedAt]]: sql`now()`,
      expiresAt: null,
      ...(move.to === "cancelled" ? { cancelReason: move.reason } : {}),
    })
    .where(eq(orders.id, orderId))
    .returning();
  const order = toOrder(row, items);
  await writeOrderEvent(tx, topology, move.to as OrderEventName, order, move);
  return { order, moved: true };
}

/**
 * L2: takes each line's quantity from products whose stock is tracked, one product at a time in
 * id order (so concurrent orders lock the same rows in the same order and cannot deadlock).
 * Returns the indexes of the lines that did not fit; the caller rolls back when there are any.
 */
export async function takeStock(
  tx: Executor,
  lines: Array<{ productId: number; qty: number; line: number }>,
): Promise<number[]> {
  const short: number[] = [];
  for (const line of [...lines].sort((a, b) => a.productId - b.productId)) {
    const taken = await run(tx, "takeStock", { id: line.productId, qty: line.qty });
    if (taken.length === 0) {
      const [product] = await run(tx, "stockOf", { id: line.productId });
      if (product?.stock !== null) short.push(line.line);
    }
  }
  return short.sort((a, b) => a - b);
}

/**
 * The writes every order makes, prepared once per process: one parse per connection instead of
 * a describe round trip and a parse each time.
 */
const run = preparedStatements((db) => {
  const id = sql.placeholder("id");
  const qty = sql.placeholder("qty");
  return {
    takeStock: db
      .update(products)
      .set({ stock: sql`${products.stock} - ${qty}` })
      .where(and(eq(products.id, id), isNotNull(products.stock), gte(products.stock, qty)))
      .returning({ id: products.id })
      .prepare("take_stock"),
    stockOf: db
      .select({ stock: products.stock })
      .from(products)
      .where(eq(products.id, id))
      .prepare("stock_of"),
    recordOnTimeline: db
      .insert(orderEvents)
      .values({
        orderId: sql.placeholder("orderId"),
        type: sql.placeholder("type"),
        source: sql.placeholder("source"),
        notificationId: sql.placeholder("notificationId"),
        detail: sql.placeholder("detail"),
      })
      .prepare("record_on_timeline"),
    writeOutbox: db
      .insert(outbox)
      .values({
        subject: sql.placeholder("subject"),
        messageId: sql.placeholder("messageId"),
        payload: sql.placeholder("payload"),
        headers: sql.placeholder("headers"),
      })
      .prepare("write_outbox"),
  };
});

/** L2: a cancelled or expired order's quantities go back to the products still tracked. */
async function giveStockBack(tx: Executor, items: ItemRow[]): Promise<void> {
  for (const item of [...items].sort((a, b) => a.productId - b.productId))
    await tx
      .update(products)
      .set({ stock: sql`${products.stock} + ${item.qty}` })
      .where(and(eq(products.id, item.productId), isNotNull(products.stock)));
}

/** The kinds of timeline entry (T1): the order events, and a payment review opened or resolved. */
export type TimelineType = OrderEventName | "review_opened" | "review_resolved";

/** T1: one timeline entry, in the caller's transaction, the same one as what it records. */
export async function recordOnTimeline(
  tx: Executor,
  orderId: number,
  type: TimelineType,
  cause: { source: EventSource; notificationId?: string },
  detail: Record<string, unknown> = {},
): Promise<void> {
  await run(tx, "recordOnTimeline", {
    orderId,
    type,
    source: cause.source,
    notificationId: cause.notificationId ?? null,
    detail,
  });
}

/**
 * M3, R5, T1: one `orders.<event>` message in the outbox and one timeline entry, in the
 * transaction of what they announce. The message carries the cause's trace context (O8).
 */
export async function writeOrderEvent(
  tx: Executor,
  topology: MessageTopology,
  event: OrderEventName,
  order: Order,
  cause: { source: EventSource; reason?: string; notificationId?: string; trace?: TraceContext },
): Promise<void> {
  const at = {
    created: order.created_at,
    paid: order.paid_at,
    cancelled: order.cancelled_at,
    refunded: order.refunded_at,
    payment_failed: new Date().toISOString(),
  }[event] as string;
  const message: OrderEvent = {
    order_id: order.order_id,
    status: order.status,
    amount: order.amount,
    currency: order.currency,
    at,
    source: cause.source,
    ...(cause.reason ? { reason: cause.reason } : {}),
    ...(cause.notificationId ? { notification_id: cause.notificationId } : {}),
    ...(event === "paid" ? { paid_at: order.paid_at as string } : {}),
  };
  await run(tx, "writeOutbox", {
    subject: topology.orders.event(event),
    messageId: orderEventMessageId(event, order.order_id, cause.notificationId),
    payload: message,
    headers: cause.trace ? { traceparent: formatTraceparent(cause.trace) } : null,
  });
  await recordOnTimeline(
    tx,
    order.order_id,
    event,
    cause,
    cause.reason ? { reason: cause.reason } : {},
  );
}

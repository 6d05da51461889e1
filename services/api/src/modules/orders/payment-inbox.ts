import {
  type MessageTopology,
  orderEventMessageId,
  type PaymentMessage,
} from "@commerce/shared/messages";
import { formatTraceparent, type TraceContext } from "@commerce/shared/tracing";
import { and, eq } from "drizzle-orm";
import type { Database, Executor } from "../../db";
import {
  orderEvents,
  paymentReviews,
  processedNotifications,
  type ReviewReason,
} from "../../db/schema";
import { clientOf } from "../../lib/prepared";
import { recordOnTimeline, transition, writeOrderEvent } from "./lifecycle";
import { itemsOf, type OrderRow, orderRow, toOrder } from "./order-rows";

/** The payment event a message reports, from its subject (M1). */
export type PaymentKind = "succeeded" | "refunded" | "failed";

export const paymentEventOf: Record<PaymentKind, string> = {
  succeeded: "payment.succeeded",
  refunded: "payment.refunded",
  failed: "payment.failed",
};

/** What applying a message did: a move, a failure recorded, a review, or nothing (seen before). */
export type PaymentOutcome = "paid" | "refunded" | "payment_failed" | "duplicate" | ReviewReason;

/**
 * L4, as a table: what a payment event does to an order in its current state. A move or a
 * recorded failure, or the reason a person must look at it.
 */
export function paymentOutcome(
  kind: PaymentKind,
  order: Pick<OrderRow, "status" | "amount" | "currency"> | undefined,
  message: Pick<PaymentMessage, "amount" | "currency">,
): Exclude<PaymentOutcome, "duplicate"> {
  if (!order) return "unknown_order";
  if (kind === "failed") return "payment_failed";
  if (message.currency !== order.currency) return "mismatch";
  if (kind === "succeeded") {
    if (message.amount !== order.amount) return "mismatch";
    if (order.status === "created") return "paid";
    // Another notification id paid this order already: possibly a second charge.
    return order.status === "paid" ? "duplicate_payment" : "order_not_payable";
  }
  if (message.amount > order.amount) return "mismatch";
  if (message.amount < order.amount) return "partial_refund";
  return order.status === "paid" ? "refunded" : "refund_not_applicable";
}

/** Whether the order's timeline or a review already holds this notification. */
async function onRecord(tx: Executor, message: PaymentMessage): Promise<boolean> {
  const [onTimeline] = await tx
    .select({ id: orderEvents.id })
    .from(orderEvents)
    .where(
      and(
        eq(orderEvents.orderId, message.order_id),
        eq(orderEvents.notificationId, message.notification_id),
      ),
    )
    .limit(1);
  if (onTimeline) return true;
  const [reviewed] = await tx
    .select({ id: paymentReviews.id })
    .from(paymentReviews)
    .where(eq(paymentReviews.notificationId, message.notification_id))
    .limit(1);
  return reviewed !== undefined;
}

/**
 * M2, M5: the common case, an order in `created` paid in full by a notification not seen before,
 * as one statement (its own transaction): lock the order if it is payable, remember the
 * notification as processed, move the order to `paid`, and write the `orders.paid` message and
 * the timeline entry, as `transition` and `writeOrderEvent` would. One round trip instead of ten
 * is what lets the consumer keep up with a burst. Anything else (a duplicate, a mismatch, an
 * unknown or unpayable order) changes nothing here and returns false, for the general path.
 * The order is locked before the notification is inserted, as in the general path, so two
 * replicas applying the same notification cannot deadlock.
 */
async function payInOneStatement(
  db: Database,
  topology: MessageTopology,
  message: PaymentMessage,
  trace?: TraceContext,
): Promise<boolean> {
  const sql = clientOf(db);
  const iso = (column: string) =>
    sql.unsafe(`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);
  const headers = trace ? JSON.stringify({ traceparent: formatTraceparent(trace) }) : null;
  const rows = await sql`
    with payable as (
      select id from api.orders
      where id = ${message.order_id} and status = 'created'
        and amount = ${message.amount} and currency = ${message.currency}
      for update
    ), first as (
      insert into api.processed_notifications (notification_id, order_id, outcome)
      select ${message.notification_id}, id, 'paid' from payable
      on conflict do nothing
      returning order_id
    ), paid as (
      update api.orders set status = 'paid', paid_at = now(), expires_at = null
      where id = (select order_id from first)
      returning id, amount, currency, ${iso("paid_at")} as paid_at
    ), message as (
      insert into api.outbox (subject, message_id, payload, headers)
      select ${topology.orders.event("paid")}, ${orderEventMessageId("paid", message.order_id)},
        jsonb_build_object('order_id', id, 'status', 'paid', 'amount', amount,
          'currency', currency, 'at', paid_at, 'source', 'webhook',
          'notification_id', ${message.notification_id}::text, 'paid_at', paid_at),
        ${headers}::jsonb
      from paid
    ), timeline as (
      insert into api.order_events (order_id, type, source, notification_id)
      select id, 'paid', 'webhook', ${message.notification_id} from paid
    )
    select id from paid`;
  return rows.length === 1;
}

/**
 * The idempotent consumer (microservices.io) of payment messages (M2): in one transaction,
 * remember the notification id (unique), lock the order, and apply L4: a move through the
 * lifecycle's `transition`, a `payment_failed` event, or a review for a person. A notification
 * seen before changes nothing. The `orders.*` message a move writes continues `trace` (O8).
 */
export async function applyPaymentMessage(
  db: Database,
  topology: MessageTopology,
  kind: PaymentKind,
  message: PaymentMessage,
  trace?: TraceContext,
): Promise<PaymentOutcome> {
  if (kind === "succeeded" && (await payInOneStatement(db, topology, message, trace)))
    return "paid";
  return db.transaction(async (tx) => {
    const order = await orderRow(tx, message.order_id, { lock: true });
    const [first] = await tx
      .insert(processedNotifications)
      .values({ notificationId: message.notification_id, orderId: message.order_id, outcome: kind })
      .onConflictDoNothing()
      .returning({ id: processedNotifications.notificationId });
    if (!first) return "duplicate";

    // What this notification did is already on record (a replay after the api lost its
    // processed-notification row): nothing to do, and certainly not a second charge.
    const proposed = paymentOutcome(kind, order, message);
    // A move cannot repeat itself (the order has left the state it moves from), so only the rest
    // needs the look-up.
    const moves = proposed === "paid" || proposed === "refunded";
    const outcome = !moves && (await onRecord(tx, message)) ? "duplicate" : proposed;
    const cause = { source: "webhook" as const, notificationId: message.notification_id, trace };
    if (outcome === "duplicate") {
      // Recorded as seen; nothing else changes.
    } else if (outcome === "paid" || outcome === "refunded")
      await transition(tx, topology, message.order_id, { to: outcome, ...cause });
    else if (outcome === "payment_failed" && order)
      await writeOrderEvent(
        tx,
        topology,
        "payment_failed",
        toOrder(order, await itemsOf(tx, order.id)),
        cause,
      );
    else {
      const [review] = await tx
        .insert(paymentReviews)
        .values({
          notificationId: message.notification_id,
          orderId: message.order_id,
          event: paymentEventOf[kind],
          reason: outcome as ReviewReason,
          amount: message.amount,
          currency: message.currency,
          message: { ...message, event: paymentEventOf[kind] },
        })
        .returning({ id: paymentReviews.id });
      if (order)
        await recordOnTimeline(tx, order.id, "review_opened", cause, {
          review_id: review.id,
          reason: outcome,
        });
    }

    await tx
      .update(processedNotifications)
      .set({ outcome })
      .where(eq(processedNotifications.notificationId, message.notification_id));
    return outcome;
  });
}

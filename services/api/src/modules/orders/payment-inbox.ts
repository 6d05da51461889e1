import { isoTimestamp } from "@commerce/shared/database";
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

/** A payment for the batch path, with the trace its `orders.paid` continues (O8). */
export type BatchedPayment = { message: PaymentMessage; trace?: TraceContext };

/**
 * M2, M5: the common case, orders in `created` each paid in full by a notification not seen
 * before, for a whole batch in one statement (its own transaction): lock the payable orders in id
 * order, remember each notification as processed, move the orders to `paid`, and write each
 * `orders.paid` message and timeline entry, as `transition` and `writeOrderEvent` would. One
 * round trip for many payments instead of about ten for each is what lets the consumer keep up
 * with a burst. Returns the notification ids that paid their order; any other payment (a
 * duplicate, a mismatch, an unknown or unpayable order) changes nothing here and is left to
 * `applyPaymentMessage`. Each order is locked before its notification is recorded, as there, so
 * replicas applying the same notification cannot deadlock.
 */
export async function payInOneStatement(
  db: Database,
  topology: MessageTopology,
  batch: BatchedPayment[],
): Promise<Set<string>> {
  // One payment per order: a second one for the same order is for the general path to judge.
  const byOrder = new Map(batch.toReversed().map((p) => [p.message.order_id, p]));
  const payments = [...byOrder.values()];
  if (payments.length === 0) return new Set();
  const sql = clientOf(db);
  const column = <T>(pick: (payment: BatchedPayment) => T) => payments.map(pick);
  const rows = await sql<{ notification_id: string }[]>`
    with input as (
      select * from unnest(
        ${column((p) => p.message.notification_id)}::text[],
        ${column((p) => p.message.order_id)}::bigint[],
        ${column((p) => p.message.amount)}::bigint[],
        ${column((p) => p.message.currency)}::text[],
        ${column((p) => orderEventMessageId("paid", p.message.order_id))}::text[],
        ${column((p) => (p.trace ? JSON.stringify({ traceparent: formatTraceparent(p.trace) }) : null))}::text[]
      ) as i(notification_id, order_id, amount, currency, message_id, headers)
    ), payable as (
      select o.id, i.notification_id
      from api.orders o join input i on i.order_id = o.id
      where o.status = 'created' and o.amount = i.amount and o.currency = i.currency
      order by o.id
      for update of o
    ), first as (
      insert into api.processed_notifications (notification_id, order_id, outcome)
      select notification_id, id, 'paid' from payable
      on conflict do nothing
      returning notification_id, order_id
    ), paid as (
      update api.orders o set status = 'paid', paid_at = now(), expires_at = null
      from first where o.id = first.order_id
      returning o.id, o.amount, o.currency, first.notification_id, ${isoTimestamp(sql, "o.paid_at")} as paid_at
    ), message as (
      insert into api.outbox (subject, message_id, payload, headers)
      select ${topology.orders.event("paid")}, i.message_id,
        jsonb_build_object('order_id', paid.id, 'status', 'paid', 'amount', paid.amount,
          'currency', paid.currency, 'at', paid.paid_at, 'source', 'webhook',
          'notification_id', paid.notification_id, 'paid_at', paid.paid_at),
        i.headers::jsonb
      from paid join input i using (notification_id)
    ), timeline as (
      insert into api.order_events (order_id, type, source, notification_id)
      select id, 'paid', 'webhook', notification_id from paid
    )
    select notification_id from paid`;
  return new Set(rows.map((row) => row.notification_id));
}

/**
 * Gathers the payments that arrive while a batch statement runs into the next one (M5): at a
 * trickle each payment is its own batch, right away; in a burst the batches grow, so the
 * statements per payment fall as the load rises. At most `statements` batches run at once.
 */
export class PaymentBatcher {
  private waiting: Array<
    BatchedPayment & { done: (paid: boolean) => void; fail: (e: unknown) => void }
  > = [];
  private running = 0;
  private scheduled = false;

  constructor(
    private readonly db: Database,
    private readonly topology: MessageTopology,
    private readonly maxBatch = 64,
    private readonly statements = 3,
  ) {}

  /** Whether this payment paid its order (false: it needs `applyPaymentMessage`). */
  pay(payment: BatchedPayment): Promise<boolean> {
    return new Promise((done, fail) => {
      this.waiting.push({ ...payment, done, fail });
      this.schedule();
    });
  }

  /** After the messages that arrived together have all joined the batch. */
  private schedule(): void {
    if (this.scheduled || this.running >= this.statements) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.waiting.length === 0 || this.running >= this.statements) return;
    const batch = this.waiting.splice(0, this.maxBatch);
    this.running++;
    try {
      const paid = await payInOneStatement(this.db, this.topology, batch);
      for (const payment of batch) payment.done(paid.has(payment.message.notification_id));
    } catch (error) {
      for (const payment of batch) payment.fail(error);
    } finally {
      this.running--;
      if (this.waiting.length) this.schedule();
    }
  }
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

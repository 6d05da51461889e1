import {
  type MessageTopology,
  orderEventMessageId,
  type PaymentMessage,
} from "@commerce/shared/messages";
import { and, eq, sql } from "drizzle-orm";
import type { Database, Executor } from "../../db";
import { outbox, paymentReviews, processedNotifications, type ReviewReason } from "../../db/schema";
import { transition, writeOrderEvent } from "./lifecycle";
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

/**
 * M2, V3: whether what this notification did is on record although its processed row is not
 * (a restored or pruned table, then an operator's replay): the `orders.*` event it caused, which
 * carries its id, or its review. Asked only when L4 would not move the order, because a move
 * this notification made leaves the order where L4 offers that move no more; without this, a
 * replayed payment of a paid order would open a review claiming a second charge.
 */
async function appliedBefore(
  tx: Executor,
  kind: PaymentKind,
  { notification_id, order_id }: PaymentMessage,
): Promise<boolean> {
  const event = { succeeded: "paid", refunded: "refunded", failed: "payment_failed" } as const;
  const [announced] = await tx
    .select({ id: outbox.id })
    .from(outbox)
    .where(
      and(
        eq(outbox.messageId, orderEventMessageId(event[kind], order_id, notification_id)),
        sql`${outbox.payload}->>'notification_id' = ${notification_id}`,
      ),
    )
    .limit(1);
  if (announced) return true;
  const [reviewed] = await tx
    .select({ id: paymentReviews.id })
    .from(paymentReviews)
    .where(eq(paymentReviews.notificationId, notification_id))
    .limit(1);
  return reviewed !== undefined;
}

/**
 * The idempotent consumer (microservices.io) of payment messages (M2): in one transaction,
 * remember the notification id (unique), lock the order, and apply L4: a move through the
 * lifecycle's `transition`, a `payment_failed` event, or a review for a person. A notification
 * seen before changes nothing, also when only its effect is on record (`appliedBefore`).
 */
export function applyPaymentMessage(
  db: Database,
  topology: MessageTopology,
  kind: PaymentKind,
  message: PaymentMessage,
): Promise<PaymentOutcome> {
  return db.transaction(async (tx) => {
    const [first] = await tx
      .insert(processedNotifications)
      .values({ notificationId: message.notification_id, orderId: message.order_id, outcome: kind })
      .onConflictDoNothing()
      .returning({ id: processedNotifications.notificationId });
    if (!first) return "duplicate";

    const order = await orderRow(tx, message.order_id, { lock: true });
    const outcome = paymentOutcome(kind, order, message);
    if (outcome !== "paid" && outcome !== "refunded" && (await appliedBefore(tx, kind, message))) {
      await tx
        .update(processedNotifications)
        .set({ outcome: "duplicate" })
        .where(eq(processedNotifications.notificationId, message.notification_id));
      return "duplicate";
    }
    const cause = { source: "webhook" as const, notificationId: message.notification_id };
    if (outcome === "paid" || outcome === "refunded")
      await transition(tx, topology, message.order_id, { to: outcome, ...cause });
    else if (outcome === "payment_failed" && order)
      await writeOrderEvent(
        tx,
        topology,
        "payment_failed",
        toOrder(order, await itemsOf(tx, order.id)),
        cause,
      );
    else
      await tx.insert(paymentReviews).values({
        notificationId: message.notification_id,
        orderId: message.order_id,
        reason: outcome as ReviewReason,
        message: { ...message, event: paymentEventOf[kind] },
      });

    await tx
      .update(processedNotifications)
      .set({ outcome })
      .where(eq(processedNotifications.notificationId, message.notification_id));
    return outcome;
  });
}

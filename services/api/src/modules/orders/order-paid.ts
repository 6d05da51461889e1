import type { PaymentOrderPaid } from "@commerce/shared/messages";
import { eq } from "drizzle-orm";
import type { Database } from "../../db";
import { orders, paymentReviews, processedNotifications } from "../../db/schema";
import { markPaid, type OrdersPaidSubject } from "./service";

export type OrderPaidOutcome = "paid" | "already_paid" | "unknown_order" | "mismatch" | "duplicate";

/**
 * The idempotent consumer (microservices.io) of `payments.order.paid` (M2): in one transaction,
 * remember the notification id (unique) and move the order `created -> paid` only if the amount
 * and currency match. A notification seen before changes nothing; an unknown order or a mismatch
 * is kept for review.
 */
export function applyOrderPaid(
  db: Database,
  message: PaymentOrderPaid,
  subject: OrdersPaidSubject,
): Promise<OrderPaidOutcome> {
  return db.transaction(async (tx) => {
    const [first] = await tx
      .insert(processedNotifications)
      .values({
        notificationId: message.notification_id,
        orderId: message.order_id,
        outcome: "paid",
      })
      .onConflictDoNothing()
      .returning({ id: processedNotifications.notificationId });
    if (!first) return "duplicate";

    const [order] = await tx
      .select({ status: orders.status, amount: orders.amount, currency: orders.currency })
      .from(orders)
      .where(eq(orders.id, message.order_id))
      .for("update");

    let outcome: Exclude<OrderPaidOutcome, "duplicate">;
    if (!order) outcome = "unknown_order";
    else if (order.amount !== message.amount || order.currency !== message.currency)
      outcome = "mismatch";
    else if (order.status !== "created") outcome = "already_paid";
    else {
      await markPaid(tx, message.order_id, "webhook", subject);
      outcome = "paid";
    }

    if (outcome === "unknown_order" || outcome === "mismatch")
      await tx.insert(paymentReviews).values({
        notificationId: message.notification_id,
        orderId: message.order_id,
        reason: outcome,
        message,
      });
    if (outcome !== "paid")
      await tx
        .update(processedNotifications)
        .set({ outcome })
        .where(eq(processedNotifications.notificationId, message.notification_id));
    return outcome;
  });
}

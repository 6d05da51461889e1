import type { DisputeMessage, MessageTopology } from "@commerce/shared/contract/messages";
import type { TraceContext } from "@commerce/shared/platform/tracing";
import { and, desc, eq, isNull, or, sql } from "drizzle-orm";
import type { Database, Executor } from "../../db";
import { orderEvents, paymentReviews, processedNotifications } from "../../db/schema";
import { orderRow } from "../orders/order-rows";
import { announceDispute, recordOnTimeline } from "../orders/state/order-events";
import { sourceOf } from "./apply";

/**
 * What applying a dispute did: announced on its order (`dispute_opened`, `_won`, `_lost`), a
 * review `unknown_order` (it names an order that does not exist), `no_order` (it names none and
 * no order was paid by its payment: logged, nothing to attach it to), or nothing (seen before).
 */
export type DisputeOutcome =
  | "dispute_opened"
  | "dispute_won"
  | "dispute_lost"
  | "unknown_order"
  | "no_order"
  | "duplicate";

/**
 * L5, G5: the order the disputed payment paid: the latest `paid` entry of that provider's payment
 * reference (an entry from before G5 names no provider and matches on its reference alone).
 */
async function orderPaidBy(tx: Executor, message: DisputeMessage): Promise<number | undefined> {
  const [paid] = await tx
    .select({ orderId: orderEvents.orderId })
    .from(orderEvents)
    .where(
      and(
        eq(orderEvents.type, "paid"),
        eq(sql`${orderEvents.detail}->>'payment_ref'`, message.payment_ref),
        or(
          eq(sql`${orderEvents.detail}->>'provider'`, message.provider),
          isNull(sql`${orderEvents.detail}->>'provider'`),
        ),
      ),
    )
    .orderBy(desc(orderEvents.id))
    .limit(1);
  return paid?.orderId;
}

/**
 * L5: a dispute or chargeback, applied in one transaction as M2 applies a payment: remember the
 * notification (unique), find the order the disputed payment paid (else the one the message
 * names), announce it (an `orders.disputed` event and a `dispute_<stage>` timeline entry) and,
 * when opened or lost, open a review `dispute` for a person. The order's status never changes:
 * what to do about the money (refund, defend, ship nothing more) is a person's call.
 */
export async function applyDisputeMessage(
  db: Database,
  topology: MessageTopology,
  message: DisputeMessage,
  trace?: TraceContext,
): Promise<{ outcome: DisputeOutcome; orderId: number | undefined }> {
  return db.transaction(async (tx) => {
    const orderId = (await orderPaidBy(tx, message)) ?? message.order_id;
    const order = orderId === undefined ? undefined : await orderRow(tx, orderId, { lock: true });
    const [first] = await tx
      .insert(processedNotifications)
      // A dispute that names no order and matches no payment is remembered under order 0.
      .values({
        notificationId: message.notification_id,
        orderId: orderId ?? 0,
        outcome: "dispute",
      })
      .onConflictDoNothing()
      .returning({ id: processedNotifications.notificationId });
    if (!first) return { outcome: "duplicate", orderId };

    const outcome: DisputeOutcome = order
      ? `dispute_${message.stage}`
      : orderId === undefined
        ? "no_order"
        : "unknown_order";
    const cause = {
      source: sourceOf(message),
      notificationId: message.notification_id,
      trace,
      paymentRef: message.payment_ref,
      provider: message.provider,
    };
    if (order) await announceDispute(tx, topology, order.id, { ...cause, stage: message.stage });
    const needsPerson = outcome === "unknown_order" || (order && message.stage !== "won");
    if (needsPerson && orderId !== undefined) {
      const reason = order ? "dispute" : "unknown_order";
      const [review] = await tx
        .insert(paymentReviews)
        .values({
          notificationId: message.notification_id,
          orderId,
          event: "payment.disputed",
          reason,
          amount: message.amount,
          currency: message.currency,
          message: { ...message, event: "payment.disputed" },
        })
        .returning({ id: paymentReviews.id });
      if (order)
        await recordOnTimeline(tx, order.id, "review_opened", cause, {
          review_id: review.id,
          reason,
          stage: message.stage,
          payment_ref: message.payment_ref,
          provider: message.provider,
        });
    }
    await tx
      .update(processedNotifications)
      .set({ outcome })
      .where(eq(processedNotifications.notificationId, message.notification_id));
    return { outcome, orderId };
  });
}

import type {
  MessageTopology,
  PaymentMessage,
  RefundOutcomeMessage,
} from "@commerce/shared/contract/messages";
import type { TraceContext } from "@commerce/shared/platform/tracing";
import type { Database, Executor } from "../../db";
import { paymentReviews, processedNotifications } from "../../db/schema";
import { orderRow } from "../orders/order-rows";
import { recordOnTimeline } from "../orders/state/order-events";
import { announceRefund, settleRefund } from "../orders/state/refunds";
import {
  lockedRefund,
  markRefund,
  openRefundsOf,
  type RefundRow,
  refundByProviderId,
  settled,
} from "../refunds/service";

/** What applying a refund outcome did (the `payment_messages_total` outcome). */
export type RefundOutcome =
  | "refund_pending"
  | "refund_succeeded"
  | "refund_failed"
  | "refund_unknown"
  | "duplicate"
  | "unknown_refund";

/** The processed-notification key of a refund outcome, as its message id spells it. */
export const refundOutcomeKey = (message: Pick<RefundOutcomeMessage, "refund_id" | "status">) =>
  `refund-${message.refund_id}-${message.status}`;

/**
 * F4: a refund the provider made: the refund `succeeded`, and the order's `refunded_amount` and
 * status follow (`settleRefund`). The caller holds the order's and the refund's locks.
 */
async function refundMade(
  tx: Executor,
  topology: MessageTopology,
  refund: RefundRow,
  cause: { notificationId: string; providerRefundId?: string; trace?: TraceContext },
): Promise<void> {
  await markRefund(tx, refund.id, {
    status: "succeeded",
    providerRefundId: cause.providerRefundId,
  });
  await settleRefund(tx, topology, refund.orderId, {
    source: "webhook",
    notificationId: cause.notificationId,
    trace: cause.trace,
    actor: refund.actor,
    paymentRef: refund.paymentRef,
    provider: refund.provider,
    refund: { id: refund.id, amount: refund.amount },
  });
}

/**
 * F2–F4, as the idempotent consumer (M2) applies a `payments.order.refund_outcome`: in one
 * transaction, the order and the refund locked, the outcome's key recorded (unique), and the
 * refund moved forward only: `pending` notes the provider's refund id, `succeeded` settles it
 * (F4), `failed` records the provider's reason with an `orders.refund_failed` and a timeline
 * entry, `unknown` opens a `refund_unknown` review for a person. A refund already settled (e.g.
 * confirmed by Adyen's notification first) is left as it is.
 */
export async function applyRefundOutcome(
  db: Database,
  topology: MessageTopology,
  message: RefundOutcomeMessage,
  trace?: TraceContext,
): Promise<RefundOutcome> {
  return db.transaction(async (tx) => {
    const order = await orderRow(tx, message.order_id, { lock: true });
    const refund = order && (await lockedRefund(tx, message.refund_id));
    if (!refund || refund.orderId !== message.order_id) return "unknown_refund";
    const notificationId = refundOutcomeKey(message);
    const [first] = await tx
      .insert(processedNotifications)
      .values({ notificationId, orderId: message.order_id, outcome: `refund_${message.status}` })
      .onConflictDoNothing()
      .returning({ id: processedNotifications.notificationId });
    if (!first) return "duplicate";
    const providerRefundId = message.provider_refund_id;

    if (message.status === "unknown") {
      if (settled(refund.status)) return "duplicate";
      const [review] = await tx
        .insert(paymentReviews)
        .values({
          notificationId,
          orderId: refund.orderId,
          event: "refund.unknown",
          reason: "refund_unknown",
          amount: refund.amount,
          currency: refund.currency,
          message: { ...message },
        })
        .returning({ id: paymentReviews.id });
      await recordOnTimeline(
        tx,
        refund.orderId,
        "review_opened",
        { source: "webhook", notificationId },
        {
          review_id: review.id,
          reason: "refund_unknown",
          refund_id: refund.id,
          payment_ref: refund.paymentRef,
          provider: refund.provider,
        },
      );
      return "refund_unknown";
    }
    if (settled(refund.status)) {
      if (providerRefundId && !refund.providerRefundId)
        await markRefund(tx, refund.id, { providerRefundId });
      return "duplicate";
    }
    if (message.status === "pending") {
      await markRefund(tx, refund.id, { status: "pending", providerRefundId });
      return "refund_pending";
    }
    if (message.status === "succeeded") {
      await refundMade(tx, topology, refund, { notificationId, providerRefundId, trace });
      return "refund_succeeded";
    }
    const reason = message.failure_reason || "The provider refused the refund";
    await markRefund(tx, refund.id, { status: "failed", providerRefundId, failureReason: reason });
    await announceRefund(tx, topology, "refund_failed", refund.orderId, {
      source: "webhook",
      notificationId,
      trace,
      reason,
      actor: refund.actor,
      paymentRef: refund.paymentRef,
      provider: refund.provider,
      refund: { id: refund.id, amount: refund.amount },
    });
    return "refund_failed";
  });
}

/**
 * Y2: the refund's own pspReference in an Adyen notification id (`adyen:REFUND:<psp>:true`), or
 * (B1) in a payment accounting report's line (`adyen:report:Refunded:<psp>`).
 */
const adyenRefundReference = (notificationId: string) => {
  const match = /^adyen:(?:REFUND:([^:]+):true|report:Refunded:([^:]+))$/.exec(notificationId);
  return match?.[1] ?? match?.[2];
};

/**
 * F3: whether a provider's refund notification is the confirmation of refunds the shop asked for,
 * not a refund of its own. Adyen's `REFUND` names the refund by the pspReference its `received`
 * answer gave (or, when that answer was not recorded yet, is the one refund of that amount still
 * waiting): that refund succeeds now (F4). Stripe's `charge.refunded` carries the charge's
 * refunded total: when the shop's own refunds of that payment cover it, nothing else happened.
 * Called with the order's row locked, for a `payment.refunded` of a provider that names payments.
 */
export async function confirmsShopRefund(
  tx: Executor,
  topology: MessageTopology,
  message: PaymentMessage & { provider: string; payment_ref: string },
  trace?: TraceContext,
): Promise<boolean> {
  const notificationId = message.notification_id;
  if (message.provider === "adyen") {
    const reference = adyenRefundReference(notificationId);
    if (!reference) return false;
    let refund = await refundByProviderId(tx, "adyen", reference);
    if (refund && refund.orderId !== message.order_id) return false;
    if (!refund) {
      const waiting = (
        await openRefundsOf(tx, message.order_id, "adyen", message.payment_ref)
      ).filter((r) => !r.providerRefundId && !settled(r.status) && r.amount === message.amount);
      if (waiting.length !== 1) return false;
      refund = waiting[0];
    }
    if (!settled(refund.status))
      await refundMade(tx, topology, refund, {
        notificationId,
        providerRefundId: reference,
        trace,
      });
    return true;
  }
  if (message.provider === "stripe") {
    const ours = await openRefundsOf(tx, message.order_id, "stripe", message.payment_ref);
    const asked = ours.reduce((sum, r) => sum + r.amount, 0);
    return ours.length > 0 && message.amount <= asked;
  }
  return false;
}

import type { DisputeStage, PaymentEvent } from "@commerce/shared/contract/messages";

type StripeObject = Record<string, unknown>;

/** What one of Stripe's event types does: the message it makes and where its amount is. */
export type MoneyEvent = {
  message: PaymentEvent;
  amount: string;
  /** Whether this object moves money at all (a Checkout Session completes unpaid, S3). */
  when?: (object: StripeObject) => boolean;
  /** L5: the dispute's stage, from the Dispute object. */
  stage?: (object: StripeObject) => DisputeStage;
};

/**
 * L5: a closed dispute's stage from its `status`. `won`, and `warning_closed` (an inquiry that
 * never became a chargeback), leave the money with the shop; `lost` and anything else Stripe may
 * add (e.g. `prevented`, refunded through the card network) mean it left, and a person looks.
 */
const closedStage = (dispute: StripeObject): DisputeStage =>
  dispute.status === "won" || dispute.status === "warning_closed" ? "won" : "lost";

/**
 * S3, L5: the events that move money. A Map, not an object: an event `type` is the sender's
 * text, and `constructor` or `__proto__` must find nothing here (G2), not Object.prototype's.
 */
export const moneyEvents = new Map<string, MoneyEvent>([
  ["payment_intent.succeeded", { message: "payment.succeeded", amount: "amount_received" }],
  [
    "checkout.session.completed",
    {
      message: "payment.succeeded",
      amount: "amount_total",
      // Delayed methods (bank debits) complete unpaid; async_payment_succeeded follows.
      when: (session) => session.payment_status === "paid",
    },
  ],
  [
    "checkout.session.async_payment_succeeded",
    { message: "payment.succeeded", amount: "amount_total" },
  ],
  ["payment_intent.payment_failed", { message: "payment.failed", amount: "amount" }],
  ["checkout.session.async_payment_failed", { message: "payment.failed", amount: "amount_total" }],
  ["charge.refunded", { message: "payment.refunded", amount: "amount_refunded" }],
  [
    "charge.dispute.created",
    { message: "payment.disputed", amount: "amount", stage: () => "opened" },
  ],
  ["charge.dispute.closed", { message: "payment.disputed", amount: "amount", stage: closedStage }],
]);

import type { DisputeStage, PaymentEvent } from "@commerce/shared/contract/messages";

/** What an Adyen item does: the message it makes and, for a dispute, its stage (L5). */
export type AdyenMove = { message: PaymentEvent; stage?: DisputeStage };

const disputed = (stage: DisputeStage): AdyenMove => ({ message: "payment.disputed", stage });

/**
 * Y2, L4, L5: the items that move money, by `eventCode:success`. A Map, so an `eventCode` such as
 * `constructor` finds nothing (G2). The dispute stages follow Adyen's own descriptions of its
 * dispute webhooks (docs.adyen.com, "Dispute webhooks" and the Webhooks API explorer):
 * NOTIFICATION_OF_CHARGEBACK "the dispute process was opened" (opened); CHARGEBACK "the payment
 * was charged back, and the funds were deducted from your account" (lost: the money left, even if
 * the shop may still defend it); CHARGEBACK_REVERSED "the chargeback was successfully defended"
 * (won; not final); SECOND_CHARGEBACK "the issuing bank declined the defense; the disputed amount
 * is deducted" (lost). CANCEL_OR_REFUND that succeeded is a refund of the payment (L5 → L4: on a
 * paid order a full refund; on an order not paid, a review).
 */
export const adyenMoves = new Map<string, AdyenMove>([
  ["AUTHORISATION:true", { message: "payment.succeeded" }],
  ["AUTHORISATION:false", { message: "payment.failed" }],
  ["REFUND:true", { message: "payment.refunded" }],
  ["CANCEL_OR_REFUND:true", { message: "payment.refunded" }],
  ["NOTIFICATION_OF_CHARGEBACK:true", disputed("opened")],
  ["CHARGEBACK:true", disputed("lost")],
  ["CHARGEBACK_REVERSED:true", disputed("won")],
  ["SECOND_CHARGEBACK:true", disputed("lost")],
]);

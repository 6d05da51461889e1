import type { MessageTopology, PaymentMessage } from "@commerce/shared/contract/messages";
import type { TraceContext } from "@commerce/shared/platform/tracing";
import { and, desc, eq, sql } from "drizzle-orm";
import type { Database, Executor } from "../../db";
import {
  orderEvents,
  paymentReviews,
  processedNotifications,
  type ReviewReason,
} from "../../db/schema";
import { type OrderRow, orderRow } from "../orders/order-rows";
import { announcePaymentFailed, recordOnTimeline } from "../orders/state/order-events";
import { transition } from "../orders/state/transition";
import { confirmsShopRefund } from "./refund-outcome";

/** The payment event a message reports, from its subject (M1). */
export type PaymentKind = "succeeded" | "refunded" | "failed";

export const paymentEventOf: Record<PaymentKind, string> = {
  succeeded: "payment.succeeded",
  refunded: "payment.refunded",
  failed: "payment.failed",
};

/**
 * What applying a message did: a move, a failure recorded, a review, nothing (seen before), or
 * nothing because the payment that paid the order was told again (`same_payment`, L4).
 */
export type PaymentOutcome =
  | "paid"
  | "refunded"
  | "payment_failed"
  | "duplicate"
  | "same_payment"
  | "refund_confirmed"
  | ReviewReason;

/**
 * M1: the provider's id of the payment a message is about; a message from before M1 named none,
 * and its notification was its payment (generic).
 */
export const paymentRefOf = (message: Pick<PaymentMessage, "notification_id" | "payment_ref">) =>
  message.payment_ref ?? message.notification_id;

/** M1: who sent it; a message from before M1 was the seed's format. */
export const providerOf = (message: Pick<PaymentMessage, "provider">) =>
  message.provider ?? "generic";

/** T1, B3: what a payment message caused is the webhook's, or reconciliation's when a run found it. */
export const sourceOf = (message: Pick<PaymentMessage, "source">) =>
  message.source === "reconciliation" ? ("reconciliation" as const) : ("webhook" as const);

/** G5, L4: a payment as the api compares it: a reference within its provider. */
export type PaymentIdentity = { provider: string; ref: string };

/**
 * G5: whether two payments are one. A `paid` entry written before G5 named no provider, and its
 * reference is compared alone, as it was then.
 */
export const samePayment = (
  paidBy: { provider: string | null; ref: string },
  told: PaymentIdentity,
) => paidBy.ref === told.ref && (paidBy.provider === null || paidBy.provider === told.provider);

/**
 * G5: the notification id the api knew a message by before notification ids named their provider
 * (`stripe:evt_1` was `evt_1`, a generic `generic:stripe:x` was `stripe:x`); undefined when it
 * had no other. A message stored before G5 and replayed after it carries the new id: the
 * processed row under the old one still makes it a repeat.
 */
export function formerIdOf(message: Pick<PaymentMessage, "notification_id" | "provider">) {
  const provider = providerOf(message);
  const prefix = `${provider}:`;
  if (provider === "adyen" || !message.notification_id.startsWith(prefix)) return undefined;
  return message.notification_id.slice(prefix.length);
}

/** Whether a refund message names the payment it returns (Stripe's PaymentIntent, Adyen's original). */
const refundNamesPayment = (message: Pick<PaymentMessage, "provider">) =>
  message.provider !== undefined && message.provider !== "generic";

/**
 * L4, as a table: what a payment event does to an order in its current state. A move or a
 * recorded failure, or the reason a person must look at it.
 */
export function paymentOutcome(
  kind: PaymentKind,
  order: Pick<OrderRow, "status" | "amount" | "currency"> | undefined,
  message: Pick<PaymentMessage, "amount" | "currency">,
  /** For a paid order: the payment that paid it, and the message's (L4, G5). */
  references?: { paidBy: { provider: string | null; ref: string } | null; told: PaymentIdentity },
): Exclude<PaymentOutcome, "duplicate"> {
  if (!order) return "unknown_order";
  if (kind === "failed") return "payment_failed";
  if (message.currency !== order.currency) return "mismatch";
  if (kind === "succeeded") {
    if (message.amount !== order.amount) return "mismatch";
    if (order.status === "created") return "paid";
    if (order.status !== "paid") return "order_not_payable";
    // The payment that paid it, told again (Stripe's Checkout: two events, one PaymentIntent).
    if (references?.paidBy && samePayment(references.paidBy, references.told))
      return "same_payment";
    // Another payment paid this order already: possibly a second charge.
    return "duplicate_payment";
  }
  if (message.amount > order.amount) return "mismatch";
  if (message.amount < order.amount) return "partial_refund";
  if (order.status !== "paid") return "refund_not_applicable";
  // A refund of another payment (the second of a double charge) leaves the one that paid it.
  if (references?.paidBy && !samePayment(references.paidBy, references.told))
    return "refund_not_applicable";
  return "refunded";
}

/**
 * L4, G5: the payment that paid the order, from its `paid` timeline entry: its provider (null
 * before G5) and reference; a webhook payment from before M1 was its notification id; null when
 * a person marked it paid.
 */
async function paidByOf(
  tx: Executor,
  orderId: number,
): Promise<{ provider: string | null; ref: string } | null> {
  const [paid] = await tx
    .select({
      ref: sql<string | null>`${orderEvents.detail}->>'payment_ref'`,
      provider: sql<string | null>`${orderEvents.detail}->>'provider'`,
      notificationId: orderEvents.notificationId,
    })
    .from(orderEvents)
    .where(and(eq(orderEvents.orderId, orderId), eq(orderEvents.type, "paid")))
    .orderBy(desc(orderEvents.id))
    .limit(1);
  const ref = paid?.ref ?? paid?.notificationId;
  return ref ? { provider: paid?.provider ?? null, ref } : null;
}

/** G5: whether the api applied this message under the id it had before G5 (`formerIdOf`). */
export async function processedBefore(
  tx: Executor,
  message: Pick<PaymentMessage, "notification_id" | "provider">,
  orderId: number | undefined,
): Promise<boolean> {
  const former = formerIdOf(message);
  if (former === undefined) return false;
  const [row] = await tx
    .select({ id: processedNotifications.notificationId })
    .from(processedNotifications)
    .where(
      and(
        eq(processedNotifications.notificationId, former),
        orderId === undefined ? undefined : eq(processedNotifications.orderId, orderId),
      ),
    )
    .limit(1);
  return row !== undefined;
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
 * The idempotent consumer (microservices.io) of payment messages (M2): in one transaction,
 * remember the notification id (unique), lock the order, and apply L4: a move through the
 * state machine's `transition`, a `payment_failed` event, or a review for a person. A notification
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
    if (!first || (await processedBefore(tx, message, message.order_id))) return "duplicate";

    // What this notification did is already on record (a replay after the api lost its
    // processed-notification row): nothing to do, and certainly not a second charge.
    const told = paymentRefOf(message);
    const provider = providerOf(message);
    // F3: the provider telling of a refund the shop asked for confirms it; it is no other refund.
    if (
      kind === "refunded" &&
      order &&
      refundNamesPayment(message) &&
      (await confirmsShopRefund(tx, topology, { ...message, provider, payment_ref: told }, trace))
    ) {
      await tx
        .update(processedNotifications)
        .set({ outcome: "refund_confirmed" })
        .where(eq(processedNotifications.notificationId, message.notification_id));
      return "refund_confirmed";
    }
    // A provider's refund names the payment it returns; the seed's format names none (its
    // reference is the refund notification's own id), so only a provider's refund is compared.
    const namesPayment =
      kind === "succeeded" || (kind === "refunded" && refundNamesPayment(message));
    const references =
      namesPayment && order?.status === "paid"
        ? { paidBy: await paidByOf(tx, order.id), told: { provider, ref: told } }
        : undefined;
    const proposed = paymentOutcome(kind, order, message, references);
    // A move cannot repeat itself (the order has left the state it moves from), so only the rest
    // needs the look-up.
    const moves = proposed === "paid" || proposed === "refunded";
    const outcome = !moves && (await onRecord(tx, message)) ? "duplicate" : proposed;
    const cause = {
      source: sourceOf(message),
      notificationId: message.notification_id,
      trace,
      paymentRef: told,
      provider,
    };
    if (outcome === "duplicate" || outcome === "same_payment") {
      // Recorded as seen; nothing else changes.
    } else if (outcome === "paid" || outcome === "refunded")
      await transition(tx, topology, message.order_id, { to: outcome, ...cause });
    else if (outcome === "payment_failed" && order)
      await announcePaymentFailed(tx, topology, order.id, cause);
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
          payment_ref: told,
          provider,
        });
    }

    await tx
      .update(processedNotifications)
      .set({ outcome })
      .where(eq(processedNotifications.notificationId, message.notification_id));
    return outcome;
  });
}

import type Stripe from "stripe";
import {
  InvalidNotificationError,
  orderIdOf,
  type PaymentMode,
  providerBodyLimit,
  type ReconcileCandidate,
  type ReconcileClient,
  type ReconcilePage,
  type ReconcileSkip,
} from "../provider";
import { stripeEventNotification } from ".";
import { moneyEvents } from "./events";
import { type StripeApiSettings, stripeClient } from "./refunds";

type StripeObject = Record<string, unknown>;

/** Stripe's largest page; a page longer than asked is cut to it (B1 bad input). */
const pageSize = 100;

/** S3: the events that state a payment succeeded, each of which explains a succeeded PaymentIntent. */
const paidEvents = [
  "payment_intent.succeeded",
  "checkout.session.completed",
  "checkout.session.async_payment_succeeded",
];

const isObject = (value: unknown): value is StripeObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const idText = (value: unknown) =>
  typeof value === "string" && /^[\x21-\x7e]{1,255}$/.test(value) ? value : undefined;

/**
 * B1: Stripe's side of reconciliation, through Stripe's library pointed at STRIPE_API_URL, each
 * call bounded by `timeoutMs` (F7) with no retries of its own (the next run retries, B4).
 * `events`: the events section 15 handles (`GET /v1/events`, `created[gte]`, every page), each
 * read by the webhook's own parse. `objects`: PaymentIntents, Refunds and Disputes created in the
 * window, each state that moves money as the notification `reconcile:<object id>:<state>` its
 * webhook would have been, with what stored notification would explain it.
 * G4: an event of another account or of the other mode, and an object of the other mode, is
 * skipped (never stored, never a move).
 */
export function stripeReconciler(
  settings: StripeApiSettings,
  timeoutMs: number,
  mode: PaymentMode,
): ReconcileClient {
  const client = stripeClient(settings, timeoutMs);
  const livemode = mode === "live";
  const source = new URL(settings.url).hostname;

  /**
   * Every page of one of Stripe's lists since `from` (unix seconds), newest first, by the
   * library's `list` with `starting_after`: items past `limit` on a page (a huge page) are
   * skipped and the next page starts after the last one kept, so nothing is lost if the server
   * pages honestly.
   */
  async function* pagesOf(
    list: (
      params: Stripe.PaginationParams & { created: { gte: number; lte?: number } },
    ) => Promise<{
      data: unknown[];
      has_more: boolean;
    }>,
    from: number,
    to?: number,
  ): AsyncGenerator<{ items: unknown[]; skipped: ReconcileSkip[] }> {
    let after: string | undefined;
    const seen = new Set<string>();
    for (;;) {
      const page = await list({
        created: to === undefined ? { gte: from } : { gte: from, lte: to },
        limit: pageSize,
        ...(after ? { starting_after: after } : {}),
      });
      const data = Array.isArray(page.data) ? page.data : [];
      const items = data.slice(0, pageSize);
      const skipped: ReconcileSkip[] = data.slice(pageSize).map((item) => ({
        reason: "page_too_large",
        id: isObject(item) ? idText(item.id) : undefined,
      }));
      yield { items, skipped };
      const last = [...items].reverse().find((item) => isObject(item) && idText(item.id));
      // A page cut short here goes on after its last kept item, whatever has_more said.
      if ((!page.has_more && data.length <= pageSize) || !last) return;
      after = idText((last as StripeObject).id) as string;
      if (seen.has(after)) throw new Error("Stripe's list repeated a page");
      seen.add(after);
    }
  }

  /** A listed event as its webhook would have been stored, or why it is skipped. */
  function eventCandidate(item: unknown): ReconcileCandidate | ReconcileSkip {
    if (!isObject(item)) return { reason: "malformed" };
    const id = idText(item.id);
    // G4: another account's event (Connect) or the other mode's money is not the shop's.
    if (item.account !== undefined && item.account !== null) return { reason: "other_account", id };
    if (item.livemode !== livemode) return { reason: "other_mode", id };
    const rawBody = JSON.stringify(item);
    if (rawBody.length > providerBodyLimit) return { reason: "too_large", id };
    try {
      return { notification: stripeEventNotification(item, mode), rawBody };
    } catch (error) {
      if (error instanceof InvalidNotificationError) return { reason: "malformed", id };
      throw error;
    }
  }

  /**
   * A state of an object as the event Stripe would have sent for it, read by the webhook's parse,
   * stored as `reconcile:<object id>:<state>` with the event `<object>.<state>`.
   */
  function stateCandidate(
    object: StripeObject,
    state: string,
    type: string,
    explainedBy: ReconcileCandidate["explainedBy"],
    extra: Partial<ReconcileCandidate> = {},
  ): ReconcileCandidate | ReconcileSkip {
    const objectId = idText(object.id) as string;
    const event = {
      id: `reconcile:${objectId}:${state}`,
      object: "event",
      type,
      livemode,
      created: Math.floor(Date.now() / 1000),
      data: { object },
    };
    const rawBody = JSON.stringify(event);
    if (rawBody.length > providerBodyLimit) return { reason: "too_large", id: objectId };
    try {
      const notification = stripeEventNotification(event, mode);
      if (notification.message === undefined) return { reason: "malformed", id: objectId };
      return {
        notification: { ...notification, event: `${object.object}.${state}` },
        rawBody,
        explainedBy,
        ...extra,
      };
    } catch (error) {
      if (error instanceof InvalidNotificationError) return { reason: "malformed", id: objectId };
      throw error;
    }
  }

  /** The checks every listed object passes: an object with an id, of the shop's mode. */
  function objectOf(
    item: unknown,
    kind: string,
  ): { value: StripeObject } | { skip: ReconcileSkip } {
    if (!isObject(item) || item.object !== kind || !idText(item.id))
      return { skip: { reason: "malformed" } };
    if (item.livemode !== undefined && item.livemode !== livemode)
      return { skip: { reason: "other_mode", id: idText(item.id) } };
    return { value: item };
  }

  function paymentIntentCandidate(item: unknown): ReconcileCandidate | ReconcileSkip | undefined {
    const listed = objectOf(item, "payment_intent");
    if ("skip" in listed) return listed.skip;
    const intent = listed.value;
    if (intent.status !== "succeeded") return undefined;
    if (orderIdOf((intent.metadata as StripeObject | undefined)?.order_id) === null)
      return { reason: "no_order", id: intent.id as string };
    return stateCandidate(intent, "succeeded", "payment_intent.succeeded", {
      paymentRef: intent.id as string,
      events: paidEvents,
    });
  }

  /**
   * A succeeded refund. One the shop asked for (`metadata.refund_id`, F2) is confirmed in its
   * ledger (F3); one made elsewhere (the dashboard) names its order through its PaymentIntent.
   * `refundedSoFar`: this PaymentIntent's succeeded refunds up to this one, which a stored
   * `charge.refunded` (its `amount_refunded`) must reach to explain it.
   */
  async function refundCandidate(
    refund: StripeObject,
    refundedSoFar: number,
  ): Promise<ReconcileCandidate | ReconcileSkip | undefined> {
    if (refund.status !== "succeeded" && refund.status !== "failed") return undefined;
    const intentId = idText(refund.payment_intent);
    if (!intentId) return { reason: "no_order", id: refund.id as string };
    const metadata = isObject(refund.metadata) ? refund.metadata : {};
    const refundId = orderIdOf(metadata.refund_id);
    let orderId = orderIdOf(metadata.order_id);
    const shopRefund =
      refundId === null
        ? undefined
        : {
            refundId,
            providerRefundId: refund.id as string,
            status: refund.status as "succeeded" | "failed",
            reason:
              refund.status === "failed"
                ? `Stripe: the refund failed${typeof refund.failure_reason === "string" ? ` (${refund.failure_reason})` : ""}`
                : undefined,
          };
    // A failed refund moves no money: only the shop's own (its ledger says so) matters.
    if (refund.status === "failed" && !shopRefund) return undefined;
    if (orderId === null || !shopRefund) {
      const intent = objectOf(await client.paymentIntents.retrieve(intentId), "payment_intent");
      if ("skip" in intent) return { ...intent.skip, id: refund.id as string };
      orderId = orderIdOf((intent.value.metadata as StripeObject | undefined)?.order_id);
    }
    if (orderId === null) return { reason: "no_order", id: refund.id as string };
    return stateCandidate(
      {
        ...refund,
        amount_refunded: refund.amount,
        metadata: { ...metadata, order_id: String(orderId) },
      },
      refund.status as string,
      "charge.refunded",
      { paymentRef: intentId, events: ["charge.refunded"], minAmount: refundedSoFar },
      shopRefund ? { shopRefund } : {},
    );
  }

  /** L5: an open dispute (`opened`) or a closed one (`won`, `lost`, ...). */
  function disputeCandidate(item: unknown): ReconcileCandidate | ReconcileSkip | undefined {
    const listed = objectOf(item, "dispute");
    if ("skip" in listed) return listed.skip;
    const dispute = listed.value;
    const paymentRef = idText(dispute.payment_intent) ?? idText(dispute.charge);
    if (!paymentRef) return { reason: "no_order", id: dispute.id as string };
    const closed = ["won", "lost", "warning_closed", "prevented"].includes(String(dispute.status));
    return closed
      ? stateCandidate(dispute, String(dispute.status), "charge.dispute.closed", {
          paymentRef,
          events: ["charge.dispute.closed"],
        })
      : stateCandidate(dispute, "opened", "charge.dispute.created", {
          paymentRef,
          events: ["charge.dispute.created", "charge.dispute.closed"],
        });
  }

  const split = (results: (ReconcileCandidate | ReconcileSkip | undefined)[], checked: number) => {
    const page: ReconcilePage = { checked, candidates: [], skipped: [] };
    for (const result of results)
      if (result === undefined) continue;
      else if ("notification" in result) page.candidates.push(result);
      else page.skipped.push(result);
    return page;
  };

  return {
    provider: "stripe",
    source,
    follows: { objects: "events" },
    kinds: {
      async *events(from) {
        const types = [...moneyEvents.keys()];
        for await (const { items, skipped } of pagesOf(
          (params) => client.events.list({ ...params, types }),
          from,
        )) {
          const page = split(items.map(eventCandidate), items.length);
          page.skipped.push(...skipped);
          yield page;
        }
      },
      async *objects(from, to) {
        for await (const { items, skipped } of pagesOf(
          (params) => client.paymentIntents.list(params),
          from,
          to,
        )) {
          const page = split(items.map(paymentIntentCandidate), items.length);
          page.skipped.push(...skipped);
          yield page;
        }
        // Oldest first, so each refund knows what its PaymentIntent had refunded before it.
        const refunds: StripeObject[] = [];
        const refundSkips: ReconcileSkip[] = [];
        for await (const { items, skipped } of pagesOf(
          (params) => client.refunds.list(params),
          from,
          to,
        )) {
          refundSkips.push(...skipped);
          for (const item of items) {
            const refund = objectOf(item, "refund");
            if ("skip" in refund) refundSkips.push(refund.skip);
            else refunds.push(refund.value);
          }
        }
        refunds.sort((a, b) => Number(a.created) - Number(b.created));
        const soFar = new Map<string, number>();
        const results: (ReconcileCandidate | ReconcileSkip | undefined)[] = [];
        for (const refund of refunds) {
          const intent = String(refund.payment_intent);
          const amount = Number.isSafeInteger(refund.amount) ? (refund.amount as number) : 0;
          if (refund.status === "succeeded") soFar.set(intent, (soFar.get(intent) ?? 0) + amount);
          results.push(await refundCandidate(refund, soFar.get(intent) ?? 0));
        }
        const page = split(results, refunds.length + refundSkips.length);
        page.skipped.push(...refundSkips);
        yield page;
        for await (const { items, skipped } of pagesOf(
          (params) => client.disputes.list(params),
          from,
          to,
        )) {
          const disputes = split(items.map(disputeCandidate), items.length);
          disputes.skipped.push(...skipped);
          yield disputes;
        }
      },
    },
  };
}

import type { MessageTopology } from "@commerce/shared/contract/messages";
import { ConflictError, NotFoundError } from "@commerce/shared/platform/errors";
import { offsetOf, type PageRequest, pageFromWindow } from "@commerce/shared/platform/http/paging";
import type { Metrics } from "@commerce/shared/platform/metrics";
import { and, asc, count, desc, eq, sql } from "drizzle-orm";
import type { Database } from "../../db";
import { orders, paymentReviews } from "../../db/schema";
import { windowTotal } from "../../lib/list-page";
import { recordOnTimeline } from "../orders/state/order-events";
import { transition } from "../orders/state/transition";
import type { Resolution, Review } from "./model";

type ReviewRow = typeof paymentReviews.$inferSelect;
/** A review with what its order expected (V2): null when the order is unknown. */
type ReviewWithOrder = { review: ReviewRow; expected: { amount: number; currency: string } | null };

const toReview = ({ review: row, expected }: ReviewWithOrder): Review => ({
  id: row.id,
  order_id: row.orderId,
  notification_id: row.notificationId,
  event: row.event,
  reason: row.reason,
  amount: row.amount,
  currency: row.currency,
  expected_amount: expected?.amount ?? null,
  expected_currency: expected?.currency ?? null,
  created_at: row.createdAt.toISOString(),
  status: row.status,
  resolution: row.resolution,
  note: row.note,
  resolved_at: row.resolvedAt?.toISOString() ?? null,
});

const withOrder = {
  review: paymentReviews,
  expected: { amount: orders.amount, currency: orders.currency },
};

/** V1: reviews newest first, optionally only open or resolved ones. */
export async function listReviews(db: Database, paging: PageRequest, status?: "open" | "resolved") {
  const where = status ? eq(paymentReviews.status, status) : undefined;
  const rows = await db
    .select({ ...withOrder, total: windowTotal() })
    .from(paymentReviews)
    .leftJoin(orders, eq(orders.id, paymentReviews.orderId))
    .where(where)
    .orderBy(desc(paymentReviews.id))
    .limit(paging.perPage)
    .offset(offsetOf(paging));
  return pageFromWindow(
    rows,
    () => db.select({ total: count() }).from(paymentReviews).where(where),
    paging,
    toReview,
  );
}

export async function getReview(db: Database, id: number): Promise<Review> {
  const [row] = await db
    .select(withOrder)
    .from(paymentReviews)
    .leftJoin(orders, eq(orders.id, paymentReviews.orderId))
    .where(eq(paymentReviews.id, id));
  if (!row) throw new NotFoundError(`Payment review ${id} does not exist`);
  return toReview(row);
}

/** V2: reviews whose amount or currency differs from the order's; applying one needs accept_amount. */
const differentAmount = new Set<ReviewRow["reason"]>(["mismatch", "partial_refund"]);

/** The move a review's notification asked for, when applying it can make one (V2). */
const moveOf = (row: ReviewRow) =>
  row.reason === "unknown_order"
    ? undefined
    : ({ "payment.succeeded": "paid", "payment.refunded": "refunded" } as const)[
        row.event as "payment.succeeded" | "payment.refunded"
      ];

/**
 * V2: resolves an open review once. `dismiss` changes no order; `apply` makes the move the
 * notification asked for through the state machine's `transition` (source `review`), in the same
 * transaction, and is 409 (the review stays open) when that move is not possible now, or when
 * the notification's amount or currency is not the order's (a mismatch or a partial refund)
 * and the admin did not send `accept_amount: true`. The review
 * row is locked first, so of two admins resolving at once one wins and the other gets 409.
 */
export async function resolveReview(
  db: Database,
  topology: MessageTopology,
  id: number,
  resolution: Resolution,
  resolvedBy: string,
): Promise<{ review: Review; moved: boolean }> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .select()
      .from(paymentReviews)
      .where(eq(paymentReviews.id, id))
      .for("update");
    if (!row) throw new NotFoundError(`Payment review ${id} does not exist`);
    if (row.status === "resolved")
      throw new ConflictError(
        `Payment review ${id} is already resolved (${row.resolution})`,
        undefined,
        "review_resolved",
      );

    let moved = false;
    if (resolution.action === "apply") {
      const to = moveOf(row);
      if (!to)
        throw new ConflictError(
          `Payment review ${id} (${row.reason}, ${row.event}) has no move to apply; dismiss it`,
          undefined,
          "move_not_possible",
        );
      // V6: a second payment of a paid order can move nothing; say what to do instead.
      if (row.reason === "duplicate_payment")
        throw new ConflictError(
          `Payment review ${id} is a second payment for order ${row.orderId}, which is already ` +
            "paid, so there is nothing to apply. Dismiss the review, and refund the second " +
            "payment with the payment provider if the customer was charged twice.",
          undefined,
          "move_not_possible",
        );
      if (differentAmount.has(row.reason) && resolution.accept_amount !== true) {
        const [expected] = await tx
          .select({ amount: orders.amount, currency: orders.currency })
          .from(orders)
          .where(eq(orders.id, row.orderId));
        // V6: `code` lets the console name its own checkbox ("Accept the amount received").
        throw new ConflictError(
          `Payment review ${id} is a ${row.reason}: the notification says ${row.amount} ` +
            `${row.currency}, the order expects ${expected?.amount} ${expected?.currency}; ` +
            "applying it needs the amount received accepted (accept_amount: true)",
          undefined,
          "amount_not_accepted",
        );
      }
      // M1, L4: the payment it applies, so a later notification about it is no second charge.
      const { payment_ref: paymentRef, provider } = row.message as {
        payment_ref?: string;
        provider?: string;
      };
      const result = await transition(tx, topology, row.orderId, {
        to,
        source: "review",
        notificationId: row.notificationId,
        paymentRef: paymentRef ?? row.notificationId,
        // G5: the reference is that provider's.
        provider: provider ?? "generic",
        actor: resolvedBy,
        note: resolution.note,
      });
      if (!result.moved)
        throw new ConflictError(
          `Order ${row.orderId} is already ${result.order.status}; dismiss the review instead`,
          undefined,
          "move_not_possible",
        );
      moved = true;
    }

    const [resolved] = await tx
      .update(paymentReviews)
      .set({
        status: "resolved",
        resolution: resolution.action === "apply" ? "applied" : "dismissed",
        note: resolution.note,
        resolvedBy,
        resolvedAt: sql`now()`,
      })
      .where(eq(paymentReviews.id, id))
      .returning();
    const [expected] = await tx
      .select({ amount: orders.amount, currency: orders.currency })
      .from(orders)
      .where(eq(orders.id, row.orderId));
    if (row.reason !== "unknown_order")
      await recordOnTimeline(
        tx,
        row.orderId,
        "review_resolved",
        { source: "review", notificationId: row.notificationId, actor: resolvedBy },
        { review_id: id, resolution: resolved.resolution, note: resolution.note },
      );
    return { review: toReview({ review: resolved, expected: expected ?? null }), moved };
  });
}

/**
 * The money path's gauges: open reviews by reason, and how long the oldest order that a
 * notification reported paid has been waiting unpaid (it sits in an open review).
 */
export function registerReviewMetrics(metrics: Metrics, db: Database): void {
  metrics.labelledGauge(
    "payment_reviews_open",
    "Open payment reviews by reason; each needs a person",
    ["reason"],
    async () =>
      (
        await db
          .select({ reason: paymentReviews.reason, open: count() })
          .from(paymentReviews)
          .where(eq(paymentReviews.status, "open"))
          .groupBy(paymentReviews.reason)
          .orderBy(asc(paymentReviews.reason))
      ).map((row) => ({ labels: { reason: row.reason }, value: row.open })),
  );
  metrics.gauge(
    "reported_paid_order_oldest_age_seconds",
    "Age of the oldest created order that a payment.succeeded notification reported paid (0: none)",
    async () => {
      const [row] = await db
        .select({
          age: sql<number>`coalesce(extract(epoch from now() - min(${orders.createdAt})), 0)`.mapWith(
            Number,
          ),
        })
        .from(paymentReviews)
        .innerJoin(orders, eq(orders.id, paymentReviews.orderId))
        .where(
          and(
            eq(paymentReviews.status, "open"),
            eq(paymentReviews.event, "payment.succeeded"),
            eq(orders.status, "created"),
          ),
        );
      return row.age;
    },
  );
}

import type { MessageTopology } from "@commerce/shared/contract/messages";
import { refundKeyOf } from "@commerce/shared/contract/refund-providers";
import type { Principal } from "@commerce/shared/platform/auth/token-verifier";
import { ConflictError, NotFoundError, UnavailableError } from "@commerce/shared/platform/errors";
import { and, asc, desc, eq, ne, sql } from "drizzle-orm";
import type { Database, Executor, Transaction } from "../../db";
import { orderEvents, type RefundStatus, refunds } from "../../db/schema";
import { once } from "../../lib/idempotency";
import { clientOf } from "../../lib/prepared";
import { orderRow } from "../orders/order-rows";
import { announceRefund } from "../orders/state/refunds";
import type { Refund, RefundRequest } from "./model";

type RefundRow = typeof refunds.$inferSelect;

/** The providers whose payments the payments service can refund through their APIs (F1). */
const refundingProviders = new Set(["stripe", "adyen"]);

/** F4: how long a refund request waits for the order's row lock before it answers 503. */
const orderLockTimeout = "5s";

export const toRefund = (row: RefundRow): Refund => ({
  refund_id: row.id,
  order_id: row.orderId,
  amount: row.amount,
  currency: row.currency,
  status: row.status,
  provider: row.provider,
  payment_ref: row.paymentRef,
  provider_refund_id: row.providerRefundId,
  reason: row.reason,
  failure_reason: row.failureReason,
  requested_at: row.requestedAt.toISOString(),
  settled_at: row.settledAt?.toISOString() ?? null,
  actor: row.actor,
});

/** G5: the payment that paid the order, from its latest `paid` timeline entry; null if by hand. */
async function paymentOf(tx: Executor, orderId: number) {
  const [paid] = await tx
    .select({
      ref: sql<string | null>`${orderEvents.detail}->>'payment_ref'`,
      provider: sql<string | null>`${orderEvents.detail}->>'provider'`,
    })
    .from(orderEvents)
    .where(and(eq(orderEvents.orderId, orderId), eq(orderEvents.type, "paid")))
    .orderBy(desc(orderEvents.id))
    .limit(1);
  return paid?.ref ? { ref: paid.ref, provider: paid.provider ?? "generic" } : null;
}

const elsewhere =
  'record a refund made elsewhere with PATCH /api/orders/{id} {"status":"refunded"} instead';

/**
 * F1, F2, F4: records a refund of a paid order and its `orders.refund_requested` in one
 * transaction. The order's row is locked first (with a lock timeout, so a request never waits
 * for long): of concurrent requests each sees what the others asked, and the refunds asked for
 * (requested, pending or succeeded) never sum to more than the order's amount. 409 when the order
 * is not paid, when its payment came through no provider the payments service refunds through,
 * or when the amount is more than what is left.
 */
async function recordRefund(
  tx: Transaction,
  topology: MessageTopology,
  actor: string,
  orderId: number,
  request: RefundRequest,
  configured: Set<string> | undefined,
): Promise<RefundRow> {
  await clientOf(tx).unsafe(`set local lock_timeout = '${orderLockTimeout}'`);
  const order = await orderRow(tx, orderId, { lock: true });
  if (!order) throw new NotFoundError(`Order ${orderId} does not exist`);
  if (order.status !== "paid")
    throw new ConflictError(
      `Order ${orderId} is ${order.status}; only a paid order can be refunded`,
      undefined,
      "not_refundable",
    );
  const payment = await paymentOf(tx, orderId);
  if (!payment)
    throw new ConflictError(
      `Order ${orderId} was marked paid by hand, so no provider holds its payment; ${elsewhere}`,
      undefined,
      "refund_elsewhere",
    );
  if (!refundingProviders.has(payment.provider))
    throw new ConflictError(
      `Order ${orderId} was paid through the ${payment.provider} provider, which takes no refunds from the shop; ${elsewhere}`,
      undefined,
      "refund_elsewhere",
    );
  if (configured && !configured.has(payment.provider))
    throw new ConflictError(
      `Order ${orderId} was paid through ${payment.provider}, and the payments service is not configured for ${payment.provider} refunds (${refundKeyOf[payment.provider]} is not set there); ${elsewhere}`,
      undefined,
      "refund_elsewhere",
    );
  const [asked] = await tx
    .select({ sum: sql<string>`coalesce(sum(${refunds.amount}), 0)` })
    .from(refunds)
    .where(and(eq(refunds.orderId, orderId), ne(refunds.status, "failed")));
  const left = order.amount - Number(asked.sum);
  const amount = request.amount ?? left;
  if (left <= 0)
    throw new ConflictError(
      `Order ${orderId} has nothing left to refund: refunds of its whole amount were asked for`,
      undefined,
      "amount_over_left",
    );
  if (amount > left)
    throw new ConflictError(
      `Order ${orderId} has ${left} ${order.currency} left to refund; ${amount} is more`,
      [{ path: "/amount", message: `at most ${left}` }],
      "amount_over_left",
    );
  const [row] = await tx
    .insert(refunds)
    .values({
      orderId,
      amount,
      currency: order.currency,
      provider: payment.provider,
      paymentRef: payment.ref,
      reason: request.reason ?? null,
      note: request.note,
      actor,
    })
    .returning();
  await announceRefund(tx, topology, "refund_requested", orderId, {
    source: "manual",
    actor,
    note: request.note,
    paymentRef: payment.ref,
    provider: payment.provider,
    reason: request.reason,
    refund: { id: row.id, amount },
  });
  return row;
}

const lockTimedOut = (error: unknown) =>
  (error as { code?: unknown })?.code === "55P03" ||
  (error as { cause?: { code?: unknown } })?.cause?.code === "55P03";

/** F1: POST /api/orders/{id}/refunds, once per Idempotency-Key when one is given (R2). */
export async function requestRefund(
  db: Database,
  topology: MessageTopology,
  principal: Principal,
  orderId: number,
  request: RefundRequest,
  key: string | undefined,
  /** The providers payments refunds through, when it said (`RefundProviders`). */
  configured?: Set<string>,
): Promise<{ refund: Refund; replayed: boolean }> {
  const work = async (tx: Transaction) =>
    toRefund(await recordRefund(tx, topology, principal.customerId, orderId, request, configured));
  try {
    if (key) {
      const { body, replayed } = await once(
        db,
        principal.customerId,
        key,
        ["POST /api/orders/{id}/refunds", orderId, request],
        work,
      );
      return { refund: body, replayed };
    }
    return { refund: await db.transaction(work), replayed: false };
  } catch (error) {
    if (lockTimedOut(error))
      throw new UnavailableError(`Order ${orderId} is busy with other changes; retry`);
    throw error;
  }
}

/** F1: the order's refunds, oldest first, to its owner or an admin (anyone else 404, A4). */
export async function listRefunds(
  db: Database,
  principal: Principal,
  orderId: number,
): Promise<{ items: Refund[] }> {
  const order = await orderRow(db, orderId);
  if (!order || (!principal.admin && order.customerId !== principal.customerId))
    throw new NotFoundError(`Order ${orderId} does not exist`);
  const rows = await db
    .select()
    .from(refunds)
    .where(eq(refunds.orderId, orderId))
    .orderBy(asc(refunds.id));
  return { items: rows.map(toRefund) };
}

/** A refund's row, locked for the rest of the transaction. */
export async function lockedRefund(tx: Executor, refundId: number) {
  const [row] = await tx.select().from(refunds).where(eq(refunds.id, refundId)).for("update");
  return row as RefundRow | undefined;
}

/** F3: Adyen's REFUND notification names the refund by its pspReference. */
export async function refundByProviderId(tx: Executor, provider: string, providerRefundId: string) {
  const [row] = await tx
    .select()
    .from(refunds)
    .where(and(eq(refunds.provider, provider), eq(refunds.providerRefundId, providerRefundId)))
    .for("update");
  return row as RefundRow | undefined;
}

/** The order's refunds through `provider` of `paymentRef` not yet failed. */
export async function openRefundsOf(
  tx: Executor,
  orderId: number,
  provider: string,
  paymentRef: string,
) {
  return (await tx
    .select()
    .from(refunds)
    .where(
      and(
        eq(refunds.orderId, orderId),
        eq(refunds.provider, provider),
        eq(refunds.paymentRef, paymentRef),
        ne(refunds.status, "failed"),
      ),
    )
    .orderBy(asc(refunds.id))
    .for("update")) as RefundRow[];
}

/** Where a refund stands now; only ever forward (requested → pending → succeeded | failed). */
export async function markRefund(
  tx: Executor,
  refundId: number,
  change: {
    status?: RefundStatus;
    providerRefundId?: string;
    failureReason?: string;
  },
): Promise<void> {
  const settles = change.status === "succeeded" || change.status === "failed";
  await tx
    .update(refunds)
    .set({
      ...(change.status ? { status: change.status } : {}),
      ...(change.providerRefundId ? { providerRefundId: change.providerRefundId } : {}),
      ...(change.failureReason ? { failureReason: change.failureReason } : {}),
      ...(settles ? { settledAt: sql`now()` } : {}),
    })
    .where(eq(refunds.id, refundId));
}

export const settled = (status: RefundStatus) => status === "succeeded" || status === "failed";
export type { RefundRow };

import type { MessageTopology } from "@commerce/shared/contract/messages";
import type { Executor } from "../../../db";
import { clientOf } from "../../../lib/prepared";
import { type Cause, orderEventWrites } from "./order-events";
import { transition } from "./transition";

export type RefundCause = Omit<Cause, "refund"> & { refund: { id: number; amount: number } };

/**
 * F2, F3: a refund the shop asked for, or its refusal, moves nothing but is announced like a move:
 * one `orders.refund_requested` / `orders.refund_failed` (per refund, `amount` the refund's) and
 * its timeline entry, in the caller's transaction, the one that records the refund.
 */
export async function announceRefund(
  tx: Executor,
  topology: MessageTopology,
  event: "refund_requested" | "refund_failed",
  orderId: number,
  cause: RefundCause,
): Promise<void> {
  const sql = clientOf(tx);
  await sql`
    with announced as (select *, pg_catalog.clock_timestamp() as event_at from api.orders where id = ${orderId}),
    ${orderEventWrites(sql, topology, event, "announced", cause)}
    select 1`;
}

/**
 * F4: the provider made a refund the shop asked for. The order's `refunded_amount` grows by it, in
 * the statement that announces it; a refund that leaves the paid order short of its amount keeps
 * it `paid` with an `orders.refunded` (`amount` the refund's, `refunded_amount` the sum), and the
 * one that reaches the amount moves it to `refunded` through `transition` (L1), once. The caller
 * holds the order's row lock.
 */
export async function settleRefund(
  tx: Executor,
  topology: MessageTopology,
  orderId: number,
  cause: RefundCause,
): Promise<"refunded" | "partly_refunded"> {
  const sql = clientOf(tx);
  const [counted] = await sql<{ completes: boolean }[]>`
    with counted as (
      update api.orders set refunded_amount = refunded_amount + ${cause.refund.amount}
      where id = ${orderId}
      returning *
    ), partly as (
      select *, pg_catalog.clock_timestamp() as refunded_at_now from counted
      where not (status = 'paid' and refunded_amount >= amount)
    ), announced as (
      select id, customer_id, amount, currency, status, refunded_amount,
        refunded_at_now as refunded_at
      from partly
    ), ${orderEventWrites(sql, topology, "refunded", "announced", cause)}
    select (status = 'paid' and refunded_amount >= amount) as completes from counted`;
  if (!counted?.completes) return "partly_refunded";
  const { reason: _reason, ...move } = cause;
  await transition(tx, topology, orderId, { ...move, to: "refunded" });
  return "refunded";
}

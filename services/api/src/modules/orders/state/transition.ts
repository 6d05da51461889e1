import type { EventSource, MessageTopology } from "@commerce/shared/contract/messages";
import type { Sql } from "@commerce/shared/platform/database";
import { ConflictError, NotFoundError } from "@commerce/shared/platform/errors";
import type { Executor } from "../../../db";
import type { CancelReason } from "../../../db/schema";
import { clientOf } from "../../../lib/prepared";
import type { Order, OrderStatus } from "../model";
import { itemsOf, orderRow, orderRowOf, type RawOrderRow, toOrder } from "../order-rows";
import { type Cause, orderEventWrites, traceparentOf } from "./order-events";
import { giveStockBack, takeStock } from "./stock";

/**
 * L1, the order's state machine: for each status, the statuses it may move to and what may cause
 * each move. `api` is a customer's own request, `manual` an admin's, `review` an admin applying
 * a payment review, `webhook` a payment message, `reconciliation` a payment message of what a
 * reconciliation run found at the provider (B1), `expiry` the api's own sweeper.
 */
const moves: Record<OrderStatus, Partial<Record<OrderStatus, readonly EventSource[]>>> = {
  created: {
    paid: ["webhook", "reconciliation", "manual", "review"],
    cancelled: ["api", "manual", "expiry"],
  },
  paid: { refunded: ["webhook", "reconciliation", "manual", "review"] },
  cancelled: { paid: ["review"] },
  refunded: {},
};

export type Move = Cause & { to: OrderStatus; reason?: CancelReason };
export type MoveResult = { order: Order; moved: boolean };

/** The statuses an order moves to, with the column that records when. */
const movedAt = { paid: "paid_at", cancelled: "cancelled_at", refunded: "refunded_at" } as const;
type Target = keyof typeof movedAt;

/** A statement piece (postgres.js fragment), as `orderEventWrites` gives. */
type Fragment = ReturnType<typeof orderEventWrites>;

/** One order of a move statement, with the cause and, for a payment, the amount it must match. */
type MoveInput = {
  orderId: number;
  reason?: string;
  notificationId?: string;
  traceparent: string | null;
  paymentRef?: string;
  provider?: string;
  actor?: string;
  note?: string;
  refund?: { id: number; amount: number };
  expect?: { amount: number; currency: string };
};

/**
 * The one write of an order's status (L1), shared by `transition` and `transitionMany`: locks
 * the input's orders that are in one of `from` (and match the expected amount and currency) in id
 * order, lets `claim` pick which of them move (default: all), moves them to `to` with the time of
 * the move, and writes each one's `orders.<to>` message and timeline entry. One statement, so one
 * round trip however many orders move; it answers the moved rows.
 */
function moveStatement(
  sql: Sql,
  topology: MessageTopology,
  move: { to: Target; source: EventSource; from: OrderStatus[] },
  inputs: MoveInput[],
  claim?: (sql: Sql) => Fragment,
) {
  const column = <T>(pick: (input: MoveInput) => T) => inputs.map(pick);
  return sql<RawOrderRow[]>`
    with input as (
      select * from unnest(
        ${column((i) => i.orderId)}::bigint[],
        ${column((i) => i.reason ?? null)}::text[],
        ${column((i) => i.notificationId ?? null)}::text[],
        ${column((i) => i.traceparent)}::text[],
        ${column((i) => i.expect?.amount ?? null)}::bigint[],
        ${column((i) => i.expect?.currency ?? null)}::text[],
        ${column((i) => i.paymentRef ?? null)}::text[],
        ${column((i) => i.provider ?? null)}::text[],
        ${column((i) => i.actor ?? null)}::text[],
        ${column((i) => i.note ?? null)}::text[],
        ${column((i) => i.refund?.id ?? null)}::bigint[],
        ${column((i) => i.refund?.amount ?? null)}::bigint[]
      ) as i(order_id, reason, notification_id, traceparent, amount, currency, payment_ref,
        provider, actor, note, refund_id, refund_amount)
    ), movable as (
      -- Issue 38: each order found by its primary key (a lateral probe, locked in id order),
      -- and moved by a join to these rows, not to the input: a join of the input to the table
      -- let the planner scan api.orders whole, once per batch, while it held a few thousand
      -- rows, so a paid order cost more the more orders the shop had.
      select o.id as order_id, i.notification_id
      from (select * from input order by order_id) i
      cross join lateral (
        select o.id from api.orders o
        where o.id = i.order_id and o.status = any(${move.from}::text[])
          and (i.amount is null or (o.amount = i.amount and o.currency = i.currency))
        for update
      ) o
    ), claimed as (
      ${claim ? claim(sql) : sql`select order_id from movable`}
    ), updated as (
      update api.orders o set status = ${move.to}::text,
        ${sql(movedAt[move.to])} = pg_catalog.clock_timestamp(),
        expires_at = null,
        cancel_reason = ${
          move.to === "cancelled"
            ? sql`(select i.reason from input i where i.order_id = o.id)`
            : sql`o.cancel_reason`
        }
      from movable m
      where o.id = m.order_id and m.order_id in (select order_id from claimed)
      returning o.*
    ), moved as (
      select u.*, ${move.source}::text as source, i.reason, i.notification_id, i.traceparent,
        i.payment_ref, i.provider, i.actor, i.note, i.refund_id, i.refund_amount
      from updated u join input i on i.order_id = u.id
    ), ${orderEventWrites(sql, topology, move.to, "moved", "per row")}
    select * from moved`;
}

/**
 * The one function that moves one order (L1, R4, R5). It locks the order, answers an order
 * already in the wanted status unchanged, refuses a move L1 does not allow (409 naming both
 * states), gives stock back on cancel and takes it again for a cancelled order being paid, and
 * writes the move's one `orders.*` event in the caller's transaction.
 */
export async function transition(
  tx: Executor,
  topology: MessageTopology,
  orderId: number,
  move: Move,
): Promise<MoveResult> {
  const current = await orderRow(tx, orderId, { lock: true });
  if (!current) throw new NotFoundError(`Order ${orderId} does not exist`);
  const items = await itemsOf(tx, orderId);
  if (current.status === move.to) return { order: toOrder(current, items), moved: false };
  if (move.to === "created" || !moves[current.status][move.to]?.includes(move.source))
    throw new ConflictError(
      `Order ${orderId} is ${current.status}; it cannot become ${move.to}${
        moves[current.status][move.to] ? ` this way (${move.source})` : ""
      }`,
      undefined,
      "move_not_possible",
    );

  if (current.status === "created" && move.to === "cancelled") await giveStockBack(tx, items);
  if (current.status === "cancelled" && move.to === "paid") {
    const short = await takeStock(tx, items);
    if (short.length)
      throw new ConflictError(
        `Order ${orderId} cannot be paid again: too little stock is left`,
        short.map((i) => ({ path: `/items/${i}/qty`, message: "not enough stock left" })),
        "move_not_possible",
      );
  }

  const [row] = await moveStatement(
    clientOf(tx),
    topology,
    { to: move.to, source: move.source, from: [current.status] },
    [{ ...move, orderId, traceparent: traceparentOf(move) }],
  );
  return { order: toOrder(orderRowOf(row), items), moved: true };
}

/** One order of a batch: its cause, and for a payment the amount and currency it must match. */
export type BatchMove = Omit<Cause, "source" | "reason"> & {
  orderId: number;
  expect?: { amount: number; currency: string };
};

/**
 * M5: many orders moved to `to` by `source` in one statement: each order that is in a status L1
 * lets `source` move to `to` (and matches `expect`) moves, with its `orders.*` message and
 * timeline entry, exactly as `transition` would move it; any other is left as it is, for the
 * caller to judge one by one. Only moves that touch no stock (a payment, a refund), one per order
 * (a later one for the same order is left out). `claim` (a CTE body reading `movable (order_id,
 * notification_id)` and answering the `order_id`s to move) lets the caller record something of
 * its own in the same statement, e.g. the idempotent consumer's processed notification. Returns
 * the ids of the orders it moved.
 */
export async function transitionMany(
  executor: Executor,
  topology: MessageTopology,
  move: { to: "paid" | "refunded"; source: EventSource },
  batch: BatchMove[],
  { claim }: { claim?: (sql: Sql) => Fragment } = {},
): Promise<Set<number>> {
  // cancelled → paid takes stock again, which only `transition` does.
  const from = (["created", "paid"] as const).filter((status) =>
    moves[status][move.to]?.includes(move.source),
  );
  const firstPerOrder = new Map(batch.toReversed().map((m) => [m.orderId, m]));
  if (from.length === 0 || firstPerOrder.size === 0) return new Set();
  const inputs = [...firstPerOrder.values()].map((m) => ({
    ...m,
    traceparent: traceparentOf(m),
  }));
  const rows = await moveStatement(clientOf(executor), topology, { ...move, from }, inputs, claim);
  return new Set(rows.map((row) => Number(row.id)));
}

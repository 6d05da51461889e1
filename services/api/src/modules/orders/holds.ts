import { ConflictError } from "@commerce/shared/platform/errors";
import type { HoldLimits } from "../../config";
import type { Executor } from "../../db";
import { clientOf } from "../../lib/prepared";
import type { OrderLine } from "./model";

/** N5: `HOLD_MAX_ORDERS`, `HOLD_MAX_UNITS`; 0 turns a limit off. */

export const holdLimitsApply = (holds: HoldLimits | undefined): holds is HoldLimits =>
  !!holds && (holds.maxOrders > 0 || holds.maxUnits > 0);

/**
 * How long a placement waits for another placement of the same customer (and, for the rest of its
 * transaction, for any row it locks): past it, SQLSTATE 55P03 and a 503 the client retries (N14 v5).
 */
const placementLockTimeout = "5s";

/**
 * N5: stock cannot be hoarded. In the caller's transaction, and after waiting for any other
 * placement of the same customer (its row of `placement_locks`, locked: N14 v5 wants a lock of
 * the api's own schema, which the payments role cannot hold, so concurrent requests count each other):
 * 409 naming the limit when the customer already holds `maxOrders` unpaid orders, or when this
 * order would bring their unpaid units of one tracked product over `maxUnits`. An unpaid order
 * past its expiry no longer counts (the sweeper is about to cancel it).
 */
export async function withinHoldLimits(
  tx: Executor,
  holds: HoldLimits,
  customerId: string,
  lines: OrderLine[],
  oneLine: boolean,
): Promise<void> {
  const sql = clientOf(tx);
  await sql`select pg_catalog.set_config('lock_timeout', ${placementLockTimeout}, true)`;
  // The upsert locks the row, made or found: a second placement waits here for the first's commit.
  await sql`insert into api.placement_locks (customer_id) values (${customerId})
    on conflict (customer_id) do update set customer_id = excluded.customer_id`;
  const ids = lines.map((line) => line.product_id);
  const qtys = lines.map((line) => line.qty);
  const [held] = await sql<{ orders: number; over: { line: number; held: number }[] | null }[]>`
    with unpaid as (
      select id from api.orders
      where customer_id = ${customerId} and status = 'created'
        and (expires_at is null or expires_at > now())
    ), line as (
      select product_id, qty, (n - 1)::int as line
      from unnest(${ids}::int[], ${qtys}::int[]) with ordinality as given (product_id, qty, n)
    ), units as (
      select line.line, line.qty,
        coalesce((select sum(oi.qty) from api.order_items oi
          where oi.order_id in (select id from unpaid) and oi.product_id = line.product_id), 0)::int
          as held
      from line join api.products p on p.id = line.product_id and p.stock is not null
    )
    select (select count(*)::int from unpaid) as orders,
      (select json_agg(json_build_object('line', line, 'held', held) order by line)
        from units where ${holds.maxUnits}::int > 0 and held + qty > ${holds.maxUnits}::int) as over`;
  if (holds.maxOrders > 0 && held.orders >= holds.maxOrders)
    throw new ConflictError(
      `You already hold ${held.orders} unpaid orders, the most allowed (HOLD_MAX_ORDERS = ${holds.maxOrders}): pay or cancel one first`,
    );
  if (held.over?.length) {
    const [first] = held.over;
    const product = lines[first.line].product_id;
    throw new ConflictError(
      `At most ${holds.maxUnits} units of product ${product} may be held in unpaid orders (HOLD_MAX_UNITS); you hold ${first.held}`,
      held.over.map(({ line, held }) => ({
        path: oneLine ? "/qty" : `/items/${line}/qty`,
        message: `at most ${holds.maxUnits} units of product ${lines[line].product_id} in unpaid orders (HOLD_MAX_UNITS); ${held} held`,
      })),
    );
  }
}

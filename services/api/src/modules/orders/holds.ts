import { ConflictError } from "@commerce/shared/platform/errors";
import type { HoldLimits } from "../../config";
import type { Executor } from "../../db";
import { clientOf } from "../../lib/prepared";
import type { OrderLine } from "./model";

/** N5: `HOLD_MAX_ORDERS`, `HOLD_MAX_UNITS`; 0 turns a limit off. */

export const holdLimitsApply = (holds: HoldLimits | undefined): holds is HoldLimits =>
  !!holds && (holds.maxOrders > 0 || holds.maxUnits > 0);

/** The advisory-lock namespace of a customer's placements (the second key is the customer's). */
const holdLockSpace = 5_005;

/**
 * N5: stock cannot be hoarded. In the caller's transaction, and after waiting for any other
 * placement of the same customer (an advisory lock, so concurrent requests count each other):
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
  await sql`select pg_advisory_xact_lock(${holdLockSpace}, hashtext(${customerId}))`;
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

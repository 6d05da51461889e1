import type { MessageTopology } from "@commerce/shared/contract/messages";
import { ConflictError, NotFoundError } from "@commerce/shared/platform/errors";
import type { HoldLimits } from "../../config";
import type { Database, Executor } from "../../db";
import { once } from "../../lib/idempotency";
import { clientOf } from "../../lib/prepared";
import { holdLimitsApply, withinHoldLimits } from "./holds";
import type { Order, OrderLine } from "./model";
import { type ItemRow, type OrderRow, toOrder } from "./order-rows";
import { orderEventWrites } from "./state/order-events";

/** What placing an order needs besides the lines. */
export type OrderSettings = {
  topology: MessageTopology;
  currency: string;
  /** L3: seconds until an unpaid order expires; 0 = never. */
  ttlSeconds: number;
  /** N5: what a customer (not an admin) may hold unpaid. */
  holds?: HoldLimits;
};

export const orderSettingsOf = (deps: {
  topology: MessageTopology;
  storeCurrency: string;
  orderTtlSeconds: number;
  holds?: HoldLimits;
}): OrderSettings => ({
  topology: deps.topology,
  currency: deps.storeCurrency,
  ttlSeconds: deps.orderTtlSeconds,
  holds: deps.holds,
});

/**
 * R2, C4: runs `work` (placing an order), or runs it once per customer and Idempotency-Key in
 * a transaction when a key is given, and tells the relay of a new order's event after the commit.
 * `replayed`: the order is the first request's, answered again. Without a key `work` gets the
 * database itself: placing an order is one statement, atomic on its own.
 */
export async function placeOnce(
  db: Database,
  outboxWritten: () => void,
  request: { customerId: string; key?: string; what: unknown },
  work: (executor: Executor) => Promise<Order>,
): Promise<{ order: Order; replayed: boolean }> {
  const { customerId, key, what } = request;
  const result = key
    ? await once(db, customerId, key, what, work)
    : { body: await work(db), replayed: false };
  if (!result.replayed) outboxWritten();
  return { order: result.body, replayed: result.replayed };
}

/** Where a line sits in the request body, for the problem's `errors` (R1, L2). */
const linePath = (index: number, oneLine: boolean) => (oneLine ? "/qty" : `/items/${index}/qty`);

/**
 * What the statement placing an order answers: why not, or the new order and its lines. 64-bit
 * integers and timestamps come as text (drizzle's client leaves them unparsed).
 */
type Placement = {
  missing: number | null;
  short: number[];
  id: string | null;
  amount: string | null;
  currency: string | null;
  created_at: string | null;
  expires_at: string | null;
  items: ItemRow[] | null;
  /** Whether a product of the order has its stock tracked (for `HotProductOrders`). */
  tracked: boolean | null;
};

/**
 * R1, L2, L3, R5, M3: an order of `lines` at the products' current prices, with its stock
 * taken and its `orders.created` event (outbox row and timeline entry, spelled by the state
 * machine's `orderEventWrites`) written, all or nothing.
 * An unknown product is 404 naming it; a line the stock cannot cover is 409 naming the line,
 * and nothing is taken or written.
 *
 * One statement, one round trip: on the database it is atomic by itself and postgres.js
 * pipelines it with other requests' statements; in a caller's transaction (checkout, R2) it is
 * part of that. Tracked products are locked in id order (concurrent orders cannot deadlock) and
 * checked at their latest stock before anything is written; a line already short in the
 * statement's snapshot is refused without locking, so a sold-out product is no queue.
 */
export async function placeOrder(
  executor: Executor,
  settings: OrderSettings,
  customerId: string,
  lines: OrderLine[],
  { oneLine = false, admin = false } = {},
): Promise<Order> {
  // N5: a customer's orders are placed one at a time, each after checking what they hold.
  if (!admin && holdLimitsApply(settings.holds))
    return executor.transaction(async (tx) => {
      await withinHoldLimits(tx, settings.holds as HoldLimits, customerId, lines, oneLine);
      return (await placeOrderNow(tx, settings, customerId, lines, oneLine)).order;
    });
  return (await placeOrderNow(executor, settings, customerId, lines, oneLine)).order;
}

/**
 * The order's one statement, with no hold limit checked (the caller did, or none applies), and
 * whether a product of it has its stock tracked. A refusal for stock is a `ConflictError`.
 */
export async function placeOrderNow(
  executor: Executor,
  settings: OrderSettings,
  customerId: string,
  lines: OrderLine[],
  oneLine: boolean,
): Promise<{ order: Order; tracked: boolean }> {
  // Lines naming one product arrive merged (linesOf, D6).
  const ids = lines.map((line) => line.product_id);
  const qtys = lines.map((line) => line.qty);
  const sql = clientOf(executor);
  const [placement] = await sql<Placement[]>`
    with line as (
      select product_id, qty, (n - 1)::int as line
      from unnest(${ids}::int[], ${qtys}::int[]) with ordinality as given (product_id, qty, n)
    ), product as (
      select id, name, price, stock from api.products where id = any(${ids}::int[])
    ), short_now as (
      select line.line from line join product on product.id = line.product_id
      where product.stock < line.qty
    ), locked as materialized (
      select id, stock from api.products
      where id = any(${ids}::int[]) and stock is not null and not exists (select from short_now)
      order by id
      for no key update
    ), verdict as (
      select
        (select line.product_id from line
          where not exists (select from product where product.id = line.product_id)
          order by line.line limit 1) as missing,
        array(select line from short_now
          union select line.line from line join locked on locked.id = line.product_id
            where locked.stock < line.qty
          order by 1) as short
    ), placeable as (
      select from verdict where missing is null and cardinality(short) = 0
    ), taken as (
      update api.products set stock = locked.stock - line.qty
      from locked join line on line.product_id = locked.id, placeable
      where products.id = locked.id
    ), placed as (
      insert into api.orders (customer_id, amount, currency, expires_at)
      select ${customerId},
        (select sum(product.price::bigint * line.qty)
          from line join product on product.id = line.product_id),
        ${settings.currency},
        case when ${settings.ttlSeconds}::int > 0
          then now() + make_interval(secs => ${settings.ttlSeconds}::int) end
      from placeable
      returning id, customer_id, status, amount, currency, created_at, expires_at
    ), items as (
      insert into api.order_items (order_id, product_id, line, name, qty, unit_price, amount)
      select placed.id, line.product_id, line.line, product.name, line.qty, product.price,
        product.price::bigint * line.qty
      from placed, line join product on product.id = line.product_id
      returning *
    ), ${orderEventWrites(sql, settings.topology, "created", "placed", { source: "api" }, "items")}
    select verdict.missing, verdict.short,
      placed.id, placed.amount, placed.currency, placed.created_at, placed.expires_at,
      (select json_agg(json_build_object('orderId', order_id, 'productId', product_id,
          'line', line, 'name', name, 'qty', qty, 'unitPrice', unit_price, 'amount', amount)
        order by line) from items) as items,
      (select bool_or(stock is not null) from product) as tracked
    from verdict left join placed on true`;
  if (placement.missing !== null)
    throw new NotFoundError(`Product ${placement.missing} does not exist`);
  if (placement.short.length) throw stockConflict(lines, placement.short, oneLine);
  const row: OrderRow = {
    id: Number(placement.id),
    customerId,
    amount: Number(placement.amount),
    currency: placement.currency as string,
    status: "created",
    createdAt: new Date(placement.created_at as string),
    expiresAt: placement.expires_at === null ? null : new Date(placement.expires_at),
    paidAt: null,
    cancelledAt: null,
    refundedAt: null,
    refundedAmount: 0,
    cancelReason: null,
  };
  return { order: toOrder(row, placement.items as ItemRow[]), tracked: placement.tracked === true };
}

function stockConflict(lines: OrderLine[], short: number[], oneLine: boolean): ConflictError {
  return new ConflictError(
    short.length === 1
      ? `Not enough stock of product ${lines[short[0]].product_id} for this order`
      : "Not enough stock for some lines of this order",
    short.map((i) => ({
      path: linePath(i, oneLine),
      message: `not enough stock of product ${lines[i].product_id}`,
    })),
  );
}

import type { Principal } from "@commerce/shared/auth/token-verifier";
import { isoTimestamp } from "@commerce/shared/database";
import {
  ConflictError,
  ForbiddenError,
  NotFoundError,
  ValidationError,
} from "@commerce/shared/errors";
import { offsetOf, type PageRequest } from "@commerce/shared/http/paging";
import type { EventSource, MessageTopology } from "@commerce/shared/messages";
import { and, asc, desc, eq, type SQL, sql } from "drizzle-orm";
import type { Database, Executor } from "../../db";
import { orderEvents, orders } from "../../db/schema";
import { once } from "../../lib/idempotency";
import { type ListTotal, listPage, listStatements } from "../../lib/list-page";
import { clientOf, preparedStatements } from "../../lib/prepared";
import { type TimelineType, transition } from "./lifecycle";
import type { Order, OrderLine, OrderStatus } from "./model";
import { type ItemRow, itemsOf, type OrderRow, orderRow, toOrder, withItems } from "./order-rows";

/** What placing an order needs besides the lines. */
export type OrderSettings = {
  topology: MessageTopology;
  currency: string;
  /** L3: seconds until an unpaid order expires; 0 = never. */
  ttlSeconds: number;
};

export const orderSettingsOf = (deps: {
  topology: MessageTopology;
  storeCurrency: string;
  orderTtlSeconds: number;
}): OrderSettings => ({
  topology: deps.topology,
  currency: deps.storeCurrency,
  ttlSeconds: deps.orderTtlSeconds,
});

const run = preparedStatements((db) => {
  const customerId = sql.placeholder("customerId");
  const status = sql.placeholder("status");
  const read = (total: ListTotal, rowsOf: SQL) =>
    db
      .with(total)
      .select({ total: total.n, row: orders })
      .from(total)
      .leftJoin(orders, rowsOf)
      .orderBy(desc(orders.id));
  const list = (name: string, where?: SQL) =>
    listStatements(db, { table: orders, id: orders.id, order: "desc", list: name, where }, read);
  const own = eq(orders.customerId, customerId);
  const inStatus = eq(orders.status, status);
  const all = list("orders");
  const ownList = list("orders/customer", own);
  const allStatus = list("orders/status", inStatus);
  const ownStatus = list("orders/customer+status", and(own, inStatus));
  return {
    allPage: all.page.prepare("orders_page"),
    allAfter: all.after.prepare("orders_after"),
    ownPage: ownList.page.prepare("own_orders_page"),
    ownAfter: ownList.after.prepare("own_orders_after"),
    allStatusPage: allStatus.page.prepare("orders_status_page"),
    allStatusAfter: allStatus.after.prepare("orders_status_after"),
    ownStatusPage: ownStatus.page.prepare("own_orders_status_page"),
    ownStatusAfter: ownStatus.after.prepare("own_orders_status_after"),
  };
});

/**
 * R2, C4: runs `work` (placing an order), or runs it once per customer and Idempotency-Key in
 * a transaction when a key is given; tells the relay of a new order's event after the commit,
 * and gives the 201's headers (`Location`, and `Idempotent-Replayed` for a replay). Without a
 * key `work` gets the database itself: placing an order is one statement, atomic on its own.
 */
export async function placeOnce(
  db: Database,
  outboxWritten: () => void,
  request: { customerId: string; key?: string; what: unknown },
  work: (executor: Executor) => Promise<Order>,
): Promise<{ order: Order; headers: Record<string, string> }> {
  const { customerId, key, what } = request;
  const result = key
    ? await once(db, customerId, key, what, work)
    : { body: await work(db), replayed: false };
  if (!result.replayed) outboxWritten();
  const headers: Record<string, string> = { location: `/api/orders/${result.body.order_id}` };
  if (result.replayed) headers["idempotent-replayed"] = "true";
  return { order: result.body, headers };
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
};

/**
 * R1, L2, L3, R5, M3: an order of `lines` at the products' current prices, with its stock
 * taken and its `orders.created` event (outbox row and timeline entry) written, all or nothing.
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
  { oneLine = false } = {},
): Promise<Order> {
  const ids = lines.map((line) => line.product_id);
  const repeated = ids.findIndex((id, i) => ids.indexOf(id) !== i);
  if (repeated >= 0)
    throw new ValidationError("The request body is invalid", [
      { path: `/items/${repeated}/product_id`, message: "each product may appear only once" },
    ]);
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
      returning id, status, amount, currency, created_at, expires_at
    ), items as (
      insert into api.order_items (order_id, product_id, line, name, qty, unit_price, amount)
      select placed.id, line.product_id, line.line, product.name, line.qty, product.price,
        product.price::bigint * line.qty
      from placed, line join product on product.id = line.product_id
      returning *
    ), event as (
      -- The message writeOrderEvent writes for the other moves, with orderEventMessageId's id.
      insert into api.outbox (subject, message_id, payload)
      select ${settings.topology.orders.event("created")}, 'order-created-' || id,
        jsonb_build_object('order_id', id, 'status', status, 'amount', amount,
          'currency', currency, 'source', 'api',
          'at', ${isoTimestamp(sql, "created_at")})
      from placed
    ), timeline as (
      insert into api.order_events (order_id, type, source) select id, 'created', 'api' from placed
    )
    select verdict.missing, verdict.short,
      placed.id, placed.amount, placed.currency, placed.created_at, placed.expires_at,
      (select json_agg(json_build_object('orderId', order_id, 'productId', product_id,
          'line', line, 'name', name, 'qty', qty, 'unitPrice', unit_price, 'amount', amount)
        order by line) from items) as items
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
    cancelReason: null,
  };
  return toOrder(row, placement.items as ItemRow[]);
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

/** An order as its caller may see it: own orders, or any for admin (A4); else 404, never 403. */
export async function getOrder(db: Executor, principal: Principal, id: number): Promise<Order> {
  const row = await orderRow(db, id);
  if (!row || (!principal.admin && row.customerId !== principal.customerId))
    throw new NotFoundError(`Order ${id} does not exist`);
  return toOrder(row, await itemsOf(db, id));
}

/** T1: what happened to an order, oldest first; the owner's or any for an admin, else 404. */
export async function orderTimeline(db: Executor, principal: Principal, id: number) {
  const row = await orderRow(db, id);
  if (!row || (!principal.admin && row.customerId !== principal.customerId))
    throw new NotFoundError(`Order ${id} does not exist`);
  const entries = await db
    .select()
    .from(orderEvents)
    .where(eq(orderEvents.orderId, id))
    .orderBy(asc(orderEvents.id));
  return {
    items: entries.map((entry, i) => ({
      seq: i + 1,
      type: entry.type as TimelineType,
      at: entry.at.toISOString(),
      source: entry.source as EventSource,
      notification_id: entry.notificationId,
      detail: entry.detail as Record<string, unknown>,
    })),
  };
}

/** R3, P4: own orders (all for an admin), newest first, optionally of one status. */
export async function listOrders(
  db: Database,
  principal: Principal,
  paging: PageRequest,
  status?: OrderStatus,
) {
  const scope = principal.admin ? "all" : "own";
  const filtered = status ? "Status" : "";
  const by = paging.after === undefined ? "Page" : "After";
  const customerId = principal.customerId;
  // The counter keys the triggers of migration 0006 write.
  const key = principal.admin ? (status ?? "") : status ? `${status} ${customerId}` : customerId;
  const rows = await run(db, `${scope}${filtered}${by}` as "allPage", {
    customerId,
    status,
    key,
    limit: paging.perPage,
    offset: offsetOf(paging),
    after: paging.after,
  });
  const page = listPage(rows, paging, (row) => row.id);
  return { ...page, items: await withItems(db, page.items) };
}

/**
 * R4: PATCH /api/orders/{id}. An admin may ask for any status L1 allows; a customer only to
 * cancel their own order (anything else 403; another customer's order 404).
 */
export async function changeStatus(
  db: Database,
  topology: MessageTopology,
  principal: Principal,
  orderId: number,
  to: OrderStatus,
) {
  return db.transaction(async (tx) => {
    if (!principal.admin) {
      const row = await orderRow(tx, orderId);
      if (!row || row.customerId !== principal.customerId)
        throw new NotFoundError(`Order ${orderId} does not exist`);
      if (to !== "cancelled")
        throw new ForbiddenError("A customer may only cancel their own order");
    }
    return transition(tx, topology, orderId, {
      to,
      source: principal.admin ? "manual" : "api",
      reason: to === "cancelled" ? (principal.admin ? "admin" : "customer") : undefined,
    });
  });
}

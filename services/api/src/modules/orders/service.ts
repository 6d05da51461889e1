import type { Principal } from "@commerce/shared/auth/token-verifier";
import {
  ConflictError,
  ForbiddenError,
  NotFoundError,
  ValidationError,
} from "@commerce/shared/errors";
import { offsetOf, type PageRequest } from "@commerce/shared/http/paging";
import type { EventSource, MessageTopology } from "@commerce/shared/messages";
import { and, asc, desc, eq, type SQL, sql } from "drizzle-orm";
import type { Database, Executor, Transaction } from "../../db";
import { orderEvents, orderItems, orders, products } from "../../db/schema";
import { once } from "../../lib/idempotency";
import { type ListTotal, listPage, listStatements } from "../../lib/list-page";
import { preparedStatements } from "../../lib/prepared";
import { type TimelineType, takeStock, transition, writeOrderEvent } from "./lifecycle";
import type { Order, OrderLine, OrderStatus } from "./model";
import { itemsOf, orderRow, toOrder, withItems } from "./order-rows";

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
    products: db
      .select({
        id: products.id,
        name: products.name,
        price: products.price,
        stock: products.stock,
      })
      .from(products)
      .where(sql`${products.id} = any(${sql.placeholder("ids")})`)
      .prepare("order_products"),
    insertOrder: db
      .insert(orders)
      .values({
        customerId,
        amount: sql.placeholder("amount"),
        currency: sql.placeholder("currency"),
        expiresAt: sql`case when ${sql.placeholder("ttl")}::int > 0
          then now() + make_interval(secs => ${sql.placeholder("ttl")}::int) end`,
      })
      .returning()
      .prepare("insert_order"),
    insertItem: db
      .insert(orderItems)
      .values({
        orderId: sql.placeholder("orderId"),
        productId: sql.placeholder("productId"),
        line: sql.placeholder("line"),
        name: sql.placeholder("name"),
        qty: sql.placeholder("qty"),
        unitPrice: sql.placeholder("unitPrice"),
        amount: sql.placeholder("amount"),
      })
      .returning()
      .prepare("insert_order_item"),
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
 * R2, C4: runs `work` (placing an order) in a transaction, or once per customer and
 * Idempotency-Key when a key is given; tells the relay of a new order's event, and gives the
 * 201's headers (`Location`, and `Idempotent-Replayed` for a replay).
 */
export async function placeOnce(
  db: Database,
  outboxWritten: () => void,
  request: { customerId: string; key?: string; what: unknown },
  work: (tx: Transaction) => Promise<Order>,
): Promise<{ order: Order; headers: Record<string, string> }> {
  const { customerId, key, what } = request;
  const result = key
    ? await once(db, customerId, key, what, work)
    : { body: await db.transaction(work), replayed: false };
  if (!result.replayed) outboxWritten();
  const headers: Record<string, string> = { location: `/api/orders/${result.body.order_id}` };
  if (result.replayed) headers["idempotent-replayed"] = "true";
  return { order: result.body, headers };
}

/** Where a line sits in the request body, for the problem's `errors` (R1, L2). */
const linePath = (index: number, oneLine: boolean) => (oneLine ? "/qty" : `/items/${index}/qty`);

/**
 * R1, L2: an order of `lines` at the products' current prices, with its stock taken and its
 * `orders.created` event written, all in the caller's transaction. An unknown product is 404
 * naming it; a line the stock cannot cover is 409 naming the line, and nothing is taken.
 */
export async function placeOrder(
  tx: Executor,
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
  const found = new Map(
    (await run(tx, "products", { ids })).map((product) => [product.id, product]),
  );
  const missing = ids.find((id) => !found.has(id));
  if (missing !== undefined) throw new NotFoundError(`Product ${missing} does not exist`);

  // A line already short by what was read is refused before anything is written or locked.
  const shortNow = lines.flatMap((line, i) => {
    const stock = found.get(line.product_id)?.stock;
    return stock !== null && stock !== undefined && stock < line.qty ? [i] : [];
  });
  if (shortNow.length) throw stockConflict(lines, shortNow, oneLine);

  const priced = lines.map((line, i) => {
    const product = found.get(line.product_id) as NonNullable<ReturnType<typeof found.get>>;
    return {
      line: i,
      productId: line.product_id,
      name: product.name,
      qty: line.qty,
      unitPrice: product.price,
      amount: product.price * line.qty,
    };
  });
  const [row] = await run(tx, "insertOrder", {
    customerId,
    amount: priced.reduce((sum, line) => sum + line.amount, 0),
    currency: settings.currency,
    ttl: settings.ttlSeconds,
  });
  const items =
    priced.length === 1
      ? await run(tx, "insertItem", { ...priced[0], orderId: row.id })
      : await tx
          .insert(orderItems)
          .values(priced.map((line) => ({ ...line, orderId: row.id })))
          .returning();
  const order = toOrder(row, items);
  await writeOrderEvent(tx, settings.topology, "created", order, { source: "api" });

  // Last, so the product rows stay locked for as short a time as possible before the commit.
  const tracked = priced.filter((line) => found.get(line.productId)?.stock !== null);
  const short = await takeStock(tx, tracked);
  if (short.length) throw stockConflict(lines, short, oneLine);
  return order;
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

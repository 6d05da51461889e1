import {
  ConflictError,
  HttpError,
  NotFoundError,
  UnprocessableError,
} from "@commerce/shared/errors";
import { type OrdersPaid, orderPaidMessageId } from "@commerce/shared/messages";
import { and, count, desc, eq, lt, sql } from "drizzle-orm";
import type { Database, Executor } from "../../db";
import { idempotencyKeys, orders, outbox, products } from "../../db/schema";
import { offsetOf, type PageRequest, pageFromWindow } from "../../lib/paging";
import { preparedStatements } from "../../lib/prepared";
import type { Principal } from "../auth/service";
import type { NewOrder, Order } from "./model";

type OrderRow = typeof orders.$inferSelect;

export const toOrder = (row: OrderRow): Order => ({
  order_id: row.id,
  status: row.status,
  product_id: row.productId,
  qty: row.qty,
  amount: row.amount,
  currency: row.currency,
  created_at: row.createdAt.toISOString(),
  paid_at: row.paidAt?.toISOString() ?? null,
});

/** Where `orders.paid` messages go; tests give each run its own subject. */
export type OrdersPaidSubject = string;

const run = preparedStatements((db) => {
  const id = sql.placeholder("id");
  const customerId = sql.placeholder("customerId");
  const limit = sql.placeholder("limit");
  const offset = sql.placeholder("offset");
  const pageColumns = { order: orders, total: sql<number>`count(*) over ()`.mapWith(Number) };
  return {
    price: db
      .select({ price: products.price })
      .from(products)
      .where(eq(products.id, sql.placeholder("productId")))
      .prepare("product_price"),
    insert: db
      .insert(orders)
      .values({
        customerId,
        productId: sql.placeholder("productId"),
        qty: sql.placeholder("qty"),
        amount: sql.placeholder("amount"),
        currency: sql.placeholder("currency"),
      })
      .returning()
      .prepare("insert_order"),
    anyById: db.select().from(orders).where(eq(orders.id, id)).prepare("order_by_id"),
    ownById: db
      .select()
      .from(orders)
      .where(and(eq(orders.id, id), eq(orders.customerId, customerId)))
      .prepare("own_order_by_id"),
    allPage: db
      .select(pageColumns)
      .from(orders)
      .orderBy(desc(orders.id))
      .limit(limit)
      .offset(offset)
      .prepare("orders_page"),
    ownPage: db
      .select(pageColumns)
      .from(orders)
      .where(eq(orders.customerId, customerId))
      .orderBy(desc(orders.id))
      .limit(limit)
      .offset(offset)
      .prepare("own_orders_page"),
    allCount: db.select({ total: count() }).from(orders).prepare("orders_count"),
    ownCount: db
      .select({ total: count() })
      .from(orders)
      .where(eq(orders.customerId, customerId))
      .prepare("own_orders_count"),
  };
});

export async function createOrder(
  db: Executor,
  customerId: string,
  input: NewOrder,
  currency: string,
): Promise<Order> {
  const [product] = await run(db, "price", { productId: input.product_id });
  if (!product) throw new NotFoundError(`Product ${input.product_id} does not exist`);
  const [row] = await run(db, "insert", {
    customerId,
    productId: input.product_id,
    qty: input.qty,
    amount: product.price * input.qty,
    currency,
  });
  return toOrder(row);
}

export type IdempotentResult = { status: number; body: Order; replayed: boolean };

const keyLifetime = sql`interval '24 hours'`;
/** A key still "running" after this long belongs to a request that died; it may be taken over. */
const abandonedAfter = sql`interval '30 seconds'`;

/**
 * POST /api/orders with an Idempotency-Key (R2): the first request claims the key, creates the
 * order and records its response in one transaction; later ones replay it, or get 409 while it
 * runs, or 422 when their body differs.
 */
export async function createOrderOnce(
  db: Database,
  customerId: string,
  key: string,
  input: NewOrder,
  currency: string,
): Promise<IdempotentResult> {
  const requestHash = new Bun.CryptoHasher("sha256")
    .update(JSON.stringify([input.product_id, input.qty]))
    .digest("hex");
  const thisKey = and(eq(idempotencyKeys.customerId, customerId), eq(idempotencyKeys.key, key));

  for (let attempt = 0; attempt < 3; attempt++) {
    const [claimed] = await db
      .insert(idempotencyKeys)
      .values({ customerId, key, requestHash })
      .onConflictDoNothing()
      .returning({ key: idempotencyKeys.key });

    if (claimed) {
      try {
        const order = await db.transaction(async (tx) => {
          const created = await createOrder(tx, customerId, input, currency);
          await tx
            .update(idempotencyKeys)
            .set({ responseStatus: 201, responseBody: created })
            .where(thisKey);
          return created;
        });
        return { status: 201, body: order, replayed: false };
      } catch (error) {
        // Nothing was created, so the key is released and a retry runs afresh.
        await db.delete(idempotencyKeys).where(thisKey);
        throw error;
      }
    }

    const [existing] = await db
      .select({
        requestHash: idempotencyKeys.requestHash,
        responseStatus: idempotencyKeys.responseStatus,
        responseBody: idempotencyKeys.responseBody,
        expired: sql<boolean>`${idempotencyKeys.createdAt} < now() - ${keyLifetime}`,
        abandoned: sql<boolean>`${idempotencyKeys.createdAt} < now() - ${abandonedAfter}`,
      })
      .from(idempotencyKeys)
      .where(thisKey);
    if (!existing) continue;
    const stale = existing.expired || (existing.responseStatus === null && existing.abandoned);
    if (stale) {
      await db
        .delete(idempotencyKeys)
        .where(and(thisKey, eq(idempotencyKeys.requestHash, existing.requestHash)));
      continue;
    }
    if (existing.requestHash !== requestHash)
      throw new UnprocessableError(
        "This Idempotency-Key was already used with a different request body",
      );
    if (existing.responseStatus === null)
      throw new ConflictError("A request with this Idempotency-Key is still being processed");
    return {
      status: existing.responseStatus,
      body: existing.responseBody as Order,
      replayed: true,
    };
  }
  throw new HttpError(500, "Internal Server Error", "Could not settle the Idempotency-Key");
}

/** An order as its caller may see it: own orders, or any for admin (A4); else 404, never 403. */
export async function getOrder(db: Executor, principal: Principal, id: number): Promise<Order> {
  const [row] = principal.admin
    ? await run(db, "anyById", { id })
    : await run(db, "ownById", { id, customerId: principal.customerId });
  if (!row) throw new NotFoundError(`Order ${id} does not exist`);
  return toOrder(row);
}

export async function listOrders(db: Database, principal: Principal, paging: PageRequest) {
  const window = {
    customerId: principal.customerId,
    limit: paging.perPage,
    offset: offsetOf(paging),
  };
  const rows = await run(db, principal.admin ? "allPage" : "ownPage", window);
  return pageFromWindow(
    rows,
    () => run(db, principal.admin ? "allCount" : "ownCount", window),
    paging,
    (row) => toOrder(row.order),
  );
}

/**
 * The one `created -> paid` move (R4, R5, M2). It changes the order only if it is still
 * `created`, and writes its `orders.paid` message to the outbox in the caller's transaction.
 * Returns the paid order and whether this call moved it; undefined for an unknown order.
 */
export async function markPaid(
  tx: Executor,
  orderId: number,
  source: OrdersPaid["source"],
  subject: OrdersPaidSubject,
): Promise<{ order: Order; moved: boolean } | undefined> {
  const [moved] = await tx
    .update(orders)
    .set({ status: "paid", paidAt: sql`now()` })
    .where(and(eq(orders.id, orderId), eq(orders.status, "created")))
    .returning();
  if (moved) {
    const order = toOrder(moved);
    const message: OrdersPaid = {
      order_id: order.order_id,
      amount: order.amount,
      currency: order.currency,
      paid_at: order.paid_at as string,
      source,
    };
    await tx
      .insert(outbox)
      .values({ subject, messageId: orderPaidMessageId(orderId), payload: message });
    return { order, moved: true };
  }
  const [row] = await tx.select().from(orders).where(eq(orders.id, orderId));
  return row ? { order: toOrder(row), moved: false } : undefined;
}

/** PATCH /api/orders/{id} `{"status":"paid"}` by an admin: already paid answers the order unchanged. */
export async function payOrderManually(
  db: Database,
  orderId: number,
  subject: OrdersPaidSubject,
): Promise<{ order: Order; moved: boolean }> {
  const result = await db.transaction((tx) => markPaid(tx, orderId, "manual", subject));
  if (!result) throw new NotFoundError(`Order ${orderId} does not exist`);
  return result;
}

export const deleteExpiredIdempotencyKeys = (db: Database) =>
  db.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, sql`now() - ${keyLifetime}`));

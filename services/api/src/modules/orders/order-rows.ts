import { asc, eq, sql } from "drizzle-orm";
import type { Executor } from "../../db";
import { orderItems, orders } from "../../db/schema";
import { preparedStatements } from "../../lib/prepared";
import type { Order } from "./model";

export type OrderRow = typeof orders.$inferSelect;
export type ItemRow = typeof orderItems.$inferSelect;

const iso = (at: Date | null) => at?.toISOString() ?? null;

/**
 * An order row as a statement written in SQL answers it: snake_case, and 64-bit integers and
 * timestamps as text (drizzle's client leaves them unparsed).
 */
export type RawOrderRow = {
  id: string | number;
  customer_id: string;
  amount: string | number;
  currency: string;
  status: OrderRow["status"];
  created_at: string | Date;
  expires_at: string | Date | null;
  paid_at: string | Date | null;
  cancelled_at: string | Date | null;
  refunded_at: string | Date | null;
  /** Absent from a row written before F4's column, read as 0. */
  refunded_amount?: string | number;
  cancel_reason: OrderRow["cancelReason"];
};

const dateOf = (at: string | Date | null) => (at === null ? null : new Date(at));

/** The row drizzle would have answered, from one written in SQL. */
export const orderRowOf = (raw: RawOrderRow): OrderRow => ({
  id: Number(raw.id),
  customerId: raw.customer_id,
  amount: Number(raw.amount),
  currency: raw.currency,
  status: raw.status,
  createdAt: new Date(raw.created_at),
  expiresAt: dateOf(raw.expires_at),
  paidAt: dateOf(raw.paid_at),
  cancelledAt: dateOf(raw.cancelled_at),
  refundedAt: dateOf(raw.refunded_at),
  refundedAmount: Number(raw.refunded_amount ?? 0),
  cancelReason: raw.cancel_reason,
});

/** The API shape of an order: its lines, and for a one-line order the seed's product_id and qty. */
export function toOrder(row: OrderRow, items: ItemRow[]): Order {
  const order: Order = {
    order_id: row.id,
    status: row.status,
    items: items.map((item) => ({
      product_id: item.productId,
      name: item.name,
      qty: item.qty,
      unit_price: item.unitPrice,
      amount: item.amount,
    })),
    amount: row.amount,
    currency: row.currency,
    created_at: row.createdAt.toISOString(),
    expires_at: row.status === "created" ? iso(row.expiresAt) : null,
    paid_at: iso(row.paidAt),
    cancelled_at: iso(row.cancelledAt),
    refunded_at: iso(row.refundedAt),
    refunded_amount: row.refundedAmount,
    cancel_reason: row.cancelReason,
  };
  if (items.length === 1) {
    order.product_id = items[0].productId;
    order.qty = items[0].qty;
  }
  return order;
}

const run = preparedStatements((db) => {
  const id = sql.placeholder("id");
  return {
    byId: db.select().from(orders).where(eq(orders.id, id)).prepare("order_by_id"),
    lockById: db.select().from(orders).where(eq(orders.id, id)).for("update").prepare("lock_order"),
    items: db
      .select()
      .from(orderItems)
      .where(eq(orderItems.orderId, id))
      .orderBy(asc(orderItems.line))
      .prepare("order_items"),
    itemsOf: db
      .select()
      .from(orderItems)
      .where(sql`${orderItems.orderId} = any(${sql.placeholder("ids")})`)
      .orderBy(asc(orderItems.orderId), asc(orderItems.line))
      .prepare("items_of_orders"),
  };
});

/** An order's row, locked for the rest of the transaction when `lock` is set. */
export async function orderRow(db: Executor, id: number, { lock = false } = {}) {
  const [row] = await run(db, lock ? "lockById" : "byId", { id });
  return row as OrderRow | undefined;
}

export const itemsOf = (db: Executor, orderId: number) => run(db, "items", { id: orderId });

/** Orders with their lines, in the rows' order, in two queries. */
export async function withItems(db: Executor, rows: OrderRow[]): Promise<Order[]> {
  if (rows.length === 0) return [];
  const items = await run(db, "itemsOf", { ids: rows.map((row) => row.id) });
  const byOrder = new Map<number, ItemRow[]>();
  for (const item of items) byOrder.set(item.orderId, [...(byOrder.get(item.orderId) ?? []), item]);
  return rows.map((row) => toOrder(row, byOrder.get(row.id) ?? []));
}

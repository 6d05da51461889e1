import { ConflictError, NotFoundError } from "@commerce/shared/platform/errors";
import { and, asc, eq, sql } from "drizzle-orm";
import type { Database, Executor } from "../../db";
import { cartItems, products } from "../../db/schema";
import { type OrderSettings, placeOrder } from "../orders/placing";
import type { CartItem } from "./model";

export async function getCart(db: Database, customerId: string) {
  const items = await db
    .select({
      product_id: products.id,
      name: products.name,
      price: products.price,
      qty: cartItems.qty,
    })
    .from(cartItems)
    .innerJoin(products, eq(products.id, cartItems.productId))
    .where(eq(cartItems.customerId, customerId))
    .orderBy(asc(cartItems.productId));
  return { items, total: items.reduce((sum, item) => sum + item.price * item.qty, 0) };
}

/** Sets the quantity of one product in the cart; `created` tells a new item from a changed one. */
export async function putCartItem(
  db: Database,
  customerId: string,
  productId: number,
  qty: number,
): Promise<{ item: CartItem; created: boolean }> {
  const [product] = await db
    .select({ name: products.name, price: products.price })
    .from(products)
    .where(eq(products.id, productId));
  if (!product) throw new NotFoundError(`Product ${productId} does not exist`);
  const [row] = await db
    .insert(cartItems)
    .values({ customerId, productId, qty })
    .onConflictDoUpdate({
      target: [cartItems.customerId, cartItems.productId],
      set: { qty, updatedAt: sql`now()` },
    })
    .returning({ created: sql<boolean>`xmax = 0` });
  return {
    item: { product_id: productId, name: product.name, price: product.price, qty },
    created: row.created,
  };
}

export async function removeCartItem(
  db: Database,
  customerId: string,
  productId: number,
): Promise<void> {
  const removed = await db
    .delete(cartItems)
    .where(and(eq(cartItems.customerId, customerId), eq(cartItems.productId, productId)))
    .returning({ productId: cartItems.productId });
  if (removed.length === 0) throw new NotFoundError(`Product ${productId} is not in the cart`);
}

/**
 * C4: an order of the cart's lines at current prices (the stock rule of R1 applies), and the
 * cart emptied, in one transaction (a savepoint when the caller's R2 transaction holds one). The
 * cart's rows are locked first, so two checkouts of one cart make one order and the second
 * finds the cart empty.
 */
export const checkout = (
  executor: Executor,
  settings: OrderSettings,
  customerId: string,
  { admin = false } = {},
) =>
  executor.transaction(async (tx) => {
    const lines = await tx
      .select({ product_id: cartItems.productId, qty: cartItems.qty })
      .from(cartItems)
      .where(eq(cartItems.customerId, customerId))
      .orderBy(asc(cartItems.productId))
      .for("update");
    if (lines.length === 0) throw new ConflictError("The cart is empty");
    const placed = await placeOrder(tx, settings, customerId, lines, { admin });
    await tx.delete(cartItems).where(eq(cartItems.customerId, customerId));
    return placed;
  });

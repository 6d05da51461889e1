import { and, eq, gte, isNotNull, sql } from "drizzle-orm";
import type { Executor } from "../../../db";
import { products } from "../../../db/schema";
import { preparedStatements } from "../../../lib/prepared";

/** Prepared once per process: one parse per connection instead of a describe and a parse each time. */
const run = preparedStatements((db) => {
  const id = sql.placeholder("id");
  const qty = sql.placeholder("qty");
  return {
    takeStock: db
      .update(products)
      .set({ stock: sql`${products.stock} - ${qty}` })
      .where(and(eq(products.id, id), isNotNull(products.stock), gte(products.stock, qty)))
      .returning({ id: products.id })
      .prepare("take_stock"),
    giveStockBack: db
      .update(products)
      .set({ stock: sql`${products.stock} + ${qty}` })
      .where(and(eq(products.id, id), isNotNull(products.stock)))
      .prepare("give_stock_back"),
    stockOf: db
      .select({ stock: products.stock })
      .from(products)
      .where(eq(products.id, id))
      .prepare("stock_of"),
  };
});

type Line = { productId: number; qty: number; line: number };

/** Id order, so concurrent moves lock the same product rows in the same order and cannot deadlock. */
const byProduct = <T extends { productId: number }>(lines: T[]) =>
  [...lines].sort((a, b) => a.productId - b.productId);

/**
 * L2, for a cancelled order paid again after a review: takes each line's quantity from products
 * whose stock is tracked, one product at a time. Returns the indexes of the lines that did not
 * fit; the caller rolls back when there are any.
 */
export async function takeStock(tx: Executor, lines: Line[]): Promise<number[]> {
  const short: number[] = [];
  for (const line of byProduct(lines)) {
    const taken = await run(tx, "takeStock", { id: line.productId, qty: line.qty });
    if (taken.length === 0) {
      const [product] = await run(tx, "stockOf", { id: line.productId });
      if (product?.stock !== null) short.push(line.line);
    }
  }
  return short.sort((a, b) => a - b);
}

/** L2: a cancelled or expired order's quantities go back to the products still tracked. */
export async function giveStockBack(tx: Executor, lines: Line[]): Promise<void> {
  for (const line of byProduct(lines))
    await run(tx, "giveStockBack", { id: line.productId, qty: line.qty });
}

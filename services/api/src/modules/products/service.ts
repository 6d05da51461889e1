import { NotFoundError } from "@commerce/shared/errors";
import { offsetOf, type PageRequest, pageFromWindow } from "@commerce/shared/http/paging";
import { asc, count, eq, sql } from "drizzle-orm";
import type { Database } from "../../db";
import { products } from "../../db/schema";
import { preparedStatements } from "../../lib/prepared";
import type { NewProduct, Product, ProductChange } from "./model";

const columns = {
  id: products.id,
  name: products.name,
  price: products.price,
  category: products.category,
  stock: products.stock,
};

/** The catalog's hot reads. */
const run = preparedStatements((db) => {
  const id = sql.placeholder("id");
  const category = sql.placeholder("category");
  const limit = sql.placeholder("limit");
  const offset = sql.placeholder("offset");
  // One query per page: the window count comes with the rows.
  const pageColumns = { ...columns, total: sql<number>`count(*) over ()`.mapWith(Number) };
  return {
    byId: db.select(columns).from(products).where(eq(products.id, id)).prepare("product_by_id"),
    page: db
      .select(pageColumns)
      .from(products)
      .orderBy(asc(products.id))
      .limit(limit)
      .offset(offset)
      .prepare("products_page"),
    categoryPage: db
      .select(pageColumns)
      .from(products)
      .where(eq(products.category, category))
      .orderBy(asc(products.id))
      .limit(limit)
      .offset(offset)
      .prepare("products_category_page"),
    count: db.select({ total: count() }).from(products).prepare("products_count"),
    categoryCount: db
      .select({ total: count() })
      .from(products)
      .where(eq(products.category, category))
      .prepare("products_category_count"),
  };
});

export async function listProducts(
  db: Database,
  category: string | undefined,
  paging: PageRequest,
) {
  const window = { category, limit: paging.perPage, offset: offsetOf(paging) };
  const rows = await run(db, category === undefined ? "page" : "categoryPage", window);
  return pageFromWindow(
    rows,
    () => run(db, category === undefined ? "count" : "categoryCount", { category }),
    paging,
    ({ total: _, ...product }) => product,
  );
}

export async function getProduct(db: Database, id: number): Promise<Product> {
  const [product] = await run(db, "byId", { id });
  if (!product) throw new NotFoundError(`Product ${id} does not exist`);
  return product;
}

export async function createProduct(db: Database, input: NewProduct): Promise<Product> {
  const [product] = await db.insert(products).values(input).returning(columns);
  return product;
}

export async function updateProduct(
  db: Database,
  id: number,
  change: ProductChange,
): Promise<Product> {
  const [product] = await db
    .update(products)
    .set(change)
    .where(eq(products.id, id))
    .returning(columns);
  if (!product) throw new NotFoundError(`Product ${id} does not exist`);
  return product;
}

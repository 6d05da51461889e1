import { NotFoundError } from "@commerce/shared/errors";
import { asc, count, eq, sql } from "drizzle-orm";
import { type Database, preparedFor } from "../../db";
import { products } from "../../db/schema";
import type { NewProduct, Product, ProductChange } from "./model";

const columns = {
  id: products.id,
  name: products.name,
  price: products.price,
  category: products.category,
};

export type PageRequest = { page: number; perPage: number };

export function pageOf<T>(items: T[], total: number, { page, perPage }: PageRequest) {
  return { items, page, pages: Math.ceil(total / perPage), per_page: perPage, total };
}

/**
 * A page read with `count(*) over ()`: its rows carry the total, except a page past the end,
 * which has no rows to carry it, so `countAll` is asked instead.
 */
export async function pageFromWindow<Row extends { total: number }, Item>(
  rows: Row[],
  countAll: () => Promise<{ total: number }[]>,
  paging: PageRequest,
  toItem: (row: Row) => Item,
) {
  const total = rows[0]?.total ?? (await countAll())[0].total;
  return pageOf(rows.map(toItem), total, paging);
}

/** The catalog's hot reads, prepared. */
const readsOf = preparedFor((db) => {
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
  const reads = readsOf(db);
  const window = { category, limit: paging.perPage, offset: (paging.page - 1) * paging.perPage };
  const rows = await (category === undefined ? reads.page : reads.categoryPage).execute(window);
  return pageFromWindow(
    rows,
    () => (category === undefined ? reads.count : reads.categoryCount).execute({ category }),
    paging,
    ({ total: _, ...product }) => product,
  );
}

export async function getProduct(db: Database, id: number): Promise<Product> {
  const [product] = await readsOf(db).byId.execute({ id });
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

import { NotFoundError } from "@commerce/shared/errors";
import { asc, count, eq } from "drizzle-orm";
import type { Database } from "../../db";
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

export async function listProducts(
  db: Database,
  category: string | undefined,
  paging: PageRequest,
) {
  const where = category === undefined ? undefined : eq(products.category, category);
  const [items, [{ total }]] = await Promise.all([
    db
      .select(columns)
      .from(products)
      .where(where)
      .orderBy(asc(products.id))
      .limit(paging.perPage)
      .offset((paging.page - 1) * paging.perPage),
    db.select({ total: count() }).from(products).where(where),
  ]);
  return pageOf(items, total, paging);
}

export async function getProduct(db: Database, id: number): Promise<Product> {
  const [product] = await db.select(columns).from(products).where(eq(products.id, id));
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

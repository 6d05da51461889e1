import { NotFoundError } from "@commerce/shared/platform/errors";
import { offsetOf, type PageRequest } from "@commerce/shared/platform/http/paging";
import { asc, eq, type SQL, sql } from "drizzle-orm";
import type { Database } from "../../db";
import { products } from "../../db/schema";
import { type ListTotal, listPage, listStatements } from "../../lib/list-page";
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
  const read = (total: ListTotal, rowsOf: SQL) =>
    db
      .with(total)
      .select({ total: total.n, row: columns })
      .from(total)
      .leftJoin(products, rowsOf)
      .orderBy(asc(products.id));
  const shape = { table: products, id: products.id, order: "asc" } as const;
  const all = listStatements(db, { ...shape, list: "products" }, read);
  const inCategory = listStatements(
    db,
    {
      ...shape,
      list: "products/category",
      where: eq(products.category, sql.placeholder("category")),
    },
    read,
  );
  return {
    byId: db.select(columns).from(products).where(eq(products.id, id)).prepare("product_by_id"),
    page: all.page.prepare("products_page"),
    after: all.after.prepare("products_after"),
    categoryPage: inCategory.page.prepare("products_category_page"),
    categoryAfter: inCategory.after.prepare("products_category_after"),
  };
});

/** P1, P4: a page of products, all or of one category, by page number or after an id. */
export async function listProducts(
  db: Database,
  category: string | undefined,
  paging: PageRequest,
) {
  const keyset = paging.after !== undefined;
  const name =
    category === undefined
      ? keyset
        ? "after"
        : "page"
      : keyset
        ? "categoryAfter"
        : "categoryPage";
  const rows = await run(db, name, {
    category,
    key: category ?? "",
    limit: paging.perPage,
    offset: offsetOf(paging),
    after: paging.after,
  });
  return listPage(rows, paging, (product) => product.id);
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

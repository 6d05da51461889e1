import { bodyInt, integer, text, urlInt } from "@commerce/shared/schema";
import { t } from "elysia";

const maxId = 2147483647;
export const productIdParam = (name: string) => urlInt("path", name, 1, maxId);
export const productIdField = bodyInt(1, maxId);

export const product = t.Object({
  id: integer(),
  name: t.String(),
  price: integer({ description: "Price in minor units of STORE_CURRENCY" }),
  category: t.String(),
});

const fields = {
  name: text(1, 200),
  price: bodyInt(0, 100_000_000, "Price in minor units of STORE_CURRENCY"),
  category: text(1, 100),
};

export const newProduct = t.Object(fields, { additionalProperties: false });
export const productChange = t.Partial(t.Object(fields), {
  additionalProperties: false,
  minProperties: 1,
});

/** `page` and `per_page` as P1 defines them; shared by every paginated list. */
export const pageQuery = {
  page: t.Optional(urlInt("query", "page", 1, 1_000_000, { default: 1 })),
  per_page: t.Optional(urlInt("query", "per_page", 1, 100, { default: 20 })),
};

export const productQuery = t.Object(
  { category: t.Optional(text(1, 100)), ...pageQuery },
  { additionalProperties: true },
);

export const page = <T extends Parameters<typeof t.Array>[0]>(item: T) =>
  t.Object({
    items: t.Array(item),
    page: integer(),
    pages: integer(),
    per_page: integer(),
    total: integer(),
  });

export const productPage = page(product);

export type Product = typeof product.static;
export type NewProduct = typeof newProduct.static;
export type ProductChange = typeof productChange.static;

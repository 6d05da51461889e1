import { keysetPage, pageQuery } from "@commerce/shared/platform/http/paging";
import { named } from "@commerce/shared/platform/openapi";
import { t } from "elysia";
import { bodyInt, integer, text } from "../../lib/fields";
import { productAfter } from "../../lib/ids";

export const product = t.Object({
  id: integer(),
  name: t.String(),
  price: integer({ description: "Price in minor units of STORE_CURRENCY" }),
  category: t.String(),
  stock: t.Nullable(
    integer({ description: "What can still be ordered; null when the stock is not tracked" }),
  ),
});

const fields = {
  name: text(1, 200, undefined, { name: "name" }),
  price: bodyInt(0, 100_000_000, "Price in minor units of STORE_CURRENCY"),
  category: text(1, 100, undefined, { name: "category" }),
  stock: t.Optional(
    t.Union([t.Null(), bodyInt(0, 1_000_000)], {
      description: "What can be ordered; null (or absent on create) for stock that is not tracked",
    }),
  ),
};

export const newProduct = t.Object(fields, {
  additionalProperties: false,
  examples: [{ name: "Desk lamp", price: 1999, category: "lighting", stock: 10 }],
});
export const productChange = t.Partial(t.Object(fields), {
  additionalProperties: false,
  minProperties: 1,
  examples: [{ price: 2499 }],
});

export const productQuery = t.Object(
  {
    category: t.Optional(text(1, 100, undefined, { name: "category" })),
    ...pageQuery,
    after: t.Optional(productAfter),
  },
  { additionalProperties: true },
);

export const productPage = keysetPage(product);

// D5: the document's named components.
named("Product", product, {
  examples: [{ id: 42, name: "Desk lamp", price: 1999, category: "lighting", stock: 10 }],
});
named("ProductPage", productPage, {
  description: "A page of products",
  examples: [
    {
      items: [{ id: 42, name: "Desk lamp", price: 1999, category: "lighting", stock: 10 }],
      page: 1,
      pages: 1,
      per_page: 20,
      total: 1,
      next_after: null,
    },
  ],
});
named("NewProduct", newProduct);
named("ProductChange", productChange);

export type Product = typeof product.static;
export type NewProduct = typeof newProduct.static;
export type ProductChange = typeof productChange.static;

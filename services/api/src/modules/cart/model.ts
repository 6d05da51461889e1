import { named } from "@commerce/shared/platform/openapi";
import { t } from "elysia";
import { bodyInt, integer } from "../../lib/fields";
import { productIdParam } from "../../lib/ids";

export const cartItem = t.Object({
  product_id: integer(),
  name: t.String(),
  price: integer(),
  qty: integer(),
});

export const cart = t.Object({
  items: t.Array(cartItem),
  total: integer({ description: "Sum of price × qty, in minor units of STORE_CURRENCY" }),
});

export const cartItemParams = t.Object({ product_id: productIdParam("product_id") });

export const cartItemChange = t.Object(
  { qty: bodyInt(1, 1000) },
  { additionalProperties: false, examples: [{ qty: 2 }] },
);

// D5: the document's named components.
named("CartItem", cartItem, {
  examples: [{ product_id: 42, name: "Desk lamp", price: 1999, qty: 2 }],
});
named("Cart", cart, {
  examples: [{ items: [{ product_id: 42, name: "Desk lamp", price: 1999, qty: 2 }], total: 3998 }],
});
named("CartItemChange", cartItemChange);

export type CartItem = typeof cartItem.static;

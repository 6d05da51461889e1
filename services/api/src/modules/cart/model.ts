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

export type CartItem = typeof cartItem.static;

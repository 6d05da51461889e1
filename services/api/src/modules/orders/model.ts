import { t } from "elysia";
import { bodyInt, integer } from "../../lib/fields";
import { productIdField } from "../../lib/ids";
import { page, pageQuery } from "../../lib/paging";

export const order = t.Object({
  order_id: integer(),
  status: t.Union([t.Literal("created"), t.Literal("paid")]),
  product_id: integer(),
  qty: integer(),
  amount: integer({ description: "price × qty at creation, in minor units of currency" }),
  currency: t.String(),
  created_at: t.String({ format: "date-time" }),
  paid_at: t.Nullable(t.String({ format: "date-time" })),
});

export const newOrder = t.Object(
  { product_id: productIdField, qty: bodyInt(1, 1000) },
  { additionalProperties: false },
);

export const orderPaidChange = t.Object(
  { status: t.Literal("paid", { description: "The only move is created → paid" }) },
  { additionalProperties: false },
);

export const orderHeaders = t.Object({
  "idempotency-key": t.Optional(
    t.String({
      minLength: 1,
      maxLength: 255,
      description: "Retrying with the same key and body within 24 h replays the first response",
    }),
  ),
});

export const orderListQuery = t.Object(pageQuery, { additionalProperties: true });
export const orderPage = page(order);

export type Order = typeof order.static;
export type NewOrder = typeof newOrder.static;

import { bodyInt, integer, urlInt } from "@commerce/shared/schema";
import { t } from "elysia";
import { page, pageQuery, productIdField } from "../products/model";

export const orderIdParam = urlInt("path", "order_id", 1, Number.MAX_SAFE_INTEGER);

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
      description: "Replays the first response for 24 h (R2)",
    }),
  ),
});

export const orderListQuery = t.Object(pageQuery, { additionalProperties: true });
export const orderPage = page(order);

export type Order = typeof order.static;
export type NewOrder = typeof newOrder.static;

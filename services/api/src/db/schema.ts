import { outboxTable } from "@commerce/shared/outbox-table";
import { sql } from "drizzle-orm";
import {
  bigint,
  check,
  index,
  integer,
  jsonb,
  pgSchema,
  primaryKey,
  serial,
  text,
  timestamp,
} from "drizzle-orm/pg-core";

export const api = pgSchema("api");

export const products = api.table(
  "products",
  {
    id: serial("id").primaryKey(),
    name: text("name").notNull(),
    price: integer("price").notNull(),
    category: text("category").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [index("products_category_id_idx").on(table.category, table.id)],
);

export const orderStatus = ["created", "paid"] as const;
export type OrderStatus = (typeof orderStatus)[number];

export const orders = api.table(
  "orders",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    customerId: text("customer_id").notNull(),
    productId: integer("product_id")
      .notNull()
      .references(() => products.id),
    qty: integer("qty").notNull(),
    amount: bigint("amount", { mode: "number" }).notNull(),
    currency: text("currency").notNull(),
    status: text("status", { enum: orderStatus }).notNull().default("created"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    paidAt: timestamp("paid_at", { withTimezone: true }),
  },
  (table) => [
    index("orders_customer_id_idx").on(table.customerId, table.id),
    check("orders_status_check", sql`${table.status} in ('created', 'paid')`),
    check("orders_paid_at_check", sql`(${table.status} = 'paid') = (${table.paidAt} is not null)`),
  ],
);

/** Idempotency-Key records for POST /api/orders (R2), kept 24 hours. */
export const idempotencyKeys = api.table(
  "idempotency_keys",
  {
    customerId: text("customer_id").notNull(),
    key: text("key").notNull(),
    requestHash: text("request_hash").notNull(),
    responseStatus: integer("response_status"),
    responseBody: jsonb("response_body"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [primaryKey({ columns: [table.customerId, table.key] })],
);

export const cartItems = api.table(
  "cart_items",
  {
    customerId: text("customer_id").notNull(),
    productId: integer("product_id")
      .notNull()
      .references(() => products.id),
    qty: integer("qty").notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [primaryKey({ columns: [table.customerId, table.productId] })],
);

/** The idempotent consumer's memory (M2): one row per order-paid message ever applied. */
export const processedNotifications = api.table("processed_notifications", {
  notificationId: text("notification_id").primaryKey(),
  orderId: bigint("order_id", { mode: "number" }).notNull(),
  outcome: text("outcome", {
    enum: ["paid", "already_paid", "unknown_order", "mismatch"],
  }).notNull(),
  processedAt: timestamp("processed_at", { withTimezone: true }).notNull().defaultNow(),
});

/** Order-paid messages that could not be applied (unknown order, amount or currency mismatch). */
export const paymentReviews = api.table("payment_reviews", {
  id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
  notificationId: text("notification_id").notNull(),
  orderId: bigint("order_id", { mode: "number" }).notNull(),
  reason: text("reason", { enum: ["unknown_order", "mismatch"] }).notNull(),
  message: jsonb("message").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

export const outbox = outboxTable(api);

import { auditLogTable } from "@commerce/shared/platform/audit-log";
import { outboxTable } from "@commerce/shared/platform/outbox/table";
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
  smallint,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";

export const api = pgSchema("api");

export const products = api.table(
  "products",
  {
    id: serial("id").primaryKey(),
    name: text("name").notNull(),
    price: integer("price").notNull(),
    category: text("category").notNull(),
    /** What can still be ordered; null when the product's stock is not tracked (P3, L2). */
    stock: integer("stock"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    index("products_category_id_idx").on(table.category, table.id),
    // The last guard against overselling: no code path can take stock below zero (L2).
    check("products_stock_check", sql`${table.stock} is null or ${table.stock} >= 0`),
  ],
);

export const orderStatus = ["created", "paid", "cancelled", "refunded"] as const;
export type OrderStatus = (typeof orderStatus)[number];

export const cancelReasons = ["customer", "admin", "expired"] as const;
export type CancelReason = (typeof cancelReasons)[number];

export const orders = api.table(
  "orders",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    customerId: text("customer_id").notNull(),
    amount: bigint("amount", { mode: "number" }).notNull(),
    currency: text("currency").notNull(),
    status: text("status", { enum: orderStatus }).notNull().default("created"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    /** When an unpaid order is cancelled as expired (L3); null when it never expires. */
    expiresAt: timestamp("expires_at", { withTimezone: true }),
    paidAt: timestamp("paid_at", { withTimezone: true }),
    cancelledAt: timestamp("cancelled_at", { withTimezone: true }),
    refundedAt: timestamp("refunded_at", { withTimezone: true }),
    /** F4: what the provider gave back of it, through refunds the shop asked for. */
    refundedAmount: bigint("refunded_amount", { mode: "number" }).notNull().default(0),
    cancelReason: text("cancel_reason", { enum: cancelReasons }),
  },
  (table) => [
    index("orders_customer_id_idx").on(table.customerId, table.id),
    // P4: a page of one status, or of one customer's orders of one status, read from an index.
    index("orders_status_id_idx").on(table.status, table.id),
    index("orders_customer_status_id_idx").on(table.customerId, table.status, table.id),
    index("orders_expiry_idx").on(table.expiresAt).where(sql`${table.status} = 'created'`),
    check(
      "orders_status_check",
      sql`${table.status} in ('created', 'paid', 'cancelled', 'refunded')`,
    ),
    check(
      "orders_cancel_reason_check",
      sql`${table.cancelReason} is null or ${table.cancelReason} in ('customer', 'admin', 'expired')`,
    ),
  ],
);

/**
 * P4: how many rows each list holds, kept by triggers on products and orders in the transaction
 * of every write, so a page reads its exact `total` without counting. A list's count is the sum
 * of its slots; each connection adds to its own slot, so concurrent orders never queue on one row.
 * `list` is `products`, `products/category`, `orders`, `orders/status`, `orders/customer` or
 * `orders/customer+status`; `key` is '' for a whole table, else the category, status, customer
 * id, or status, a space and the customer id.
 */
export const listCounts = api.table(
  "list_counts",
  {
    list: text("list").notNull(),
    key: text("key").notNull(),
    slot: smallint("slot").notNull(),
    n: bigint("n", { mode: "number" }).notNull(),
  },
  (table) => [primaryKey({ columns: [table.list, table.key, table.slot] })],
);

/** The lines of an order (R1): one per product, at the product's price when the order was made. */
export const orderItems = api.table(
  "order_items",
  {
    orderId: bigint("order_id", { mode: "number" })
      .notNull()
      .references(() => orders.id),
    productId: integer("product_id")
      .notNull()
      .references(() => products.id),
    /** The line's position in the order as placed, from 0. */
    line: integer("line").notNull(),
    name: text("name").notNull(),
    qty: integer("qty").notNull(),
    unitPrice: integer("unit_price").notNull(),
    amount: bigint("amount", { mode: "number" }).notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.orderId, table.productId] }),
    check("order_items_qty_check", sql`${table.qty} > 0`),
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

/**
 * N5, N14 (v5): one row per customer who placed an order under the hold limits; a placement
 * locks its customer's row (`FOR UPDATE`, under a lock timeout) so concurrent placements of one
 * customer count each other. A row of the api's schema, which the payments role cannot lock, where
 * an advisory lock's key could be taken by any role.
 */
export const placementLocks = api.table("placement_locks", {
  customerId: text("customer_id").primaryKey(),
});

/** The idempotent consumer's memory (M2): one row per order-paid message ever applied. */
export const processedNotifications = api.table("processed_notifications", {
  notificationId: text("notification_id").primaryKey(),
  orderId: bigint("order_id", { mode: "number" }).notNull(),
  /** What applying it did: a move (`paid`, `refunded`, `payment_failed`) or a review reason. */
  outcome: text("outcome").notNull(),
  processedAt: timestamp("processed_at", { withTimezone: true }).notNull().defaultNow(),
});

export const reviewReasons = [
  "unknown_order",
  "mismatch",
  "partial_refund",
  "duplicate_payment",
  "order_not_payable",
  "refund_not_applicable",
  /** L5: a dispute or chargeback opened, or lost: money left, or may leave, after payment. */
  "dispute",
  /** F3: a refund the shop asked for got no definite answer within REFUND_GIVE_UP_HOURS. */
  "refund_unknown",
] as const;
export type ReviewReason = (typeof reviewReasons)[number];

export const reviewStatuses = ["open", "resolved"] as const;
export const reviewResolutions = ["applied", "dismissed"] as const;

/** Payment messages that need a person (L4, V1, V2): kept with the message, never applied blindly. */
export const paymentReviews = api.table(
  "payment_reviews",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    notificationId: text("notification_id").notNull(),
    orderId: bigint("order_id", { mode: "number" }).notNull(),
    event: text("event").notNull(),
    reason: text("reason", { enum: reviewReasons }).notNull(),
    amount: bigint("amount", { mode: "number" }).notNull(),
    currency: text("currency").notNull(),
    message: jsonb("message").notNull(),
    status: text("status", { enum: reviewStatuses }).notNull().default("open"),
    resolution: text("resolution", { enum: reviewResolutions }),
    note: text("note"),
    resolvedBy: text("resolved_by"),
    resolvedAt: timestamp("resolved_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    index("payment_reviews_status_id_idx").on(table.status, table.id),
    index("payment_reviews_order_id_idx").on(table.orderId),
    index("payment_reviews_notification_id_idx").on(table.notificationId),
  ],
);

/**
 * T1: what happened to each order, one row per thing, written in the transaction of the thing
 * it records (never reconstructed later).
 */
export const orderEvents = api.table(
  "order_events",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    orderId: bigint("order_id", { mode: "number" })
      .notNull()
      .references(() => orders.id),
    type: text("type").notNull(),
    at: timestamp("at", { withTimezone: true }).notNull().defaultNow(),
    source: text("source").notNull(),
    notificationId: text("notification_id"),
    /** V5: the admin's token `sub` for a manual move or a review resolution; null otherwise. */
    actor: text("actor"),
    detail: jsonb("detail").notNull().default({}),
  },
  (table) => [
    index("order_events_order_id_idx").on(table.orderId, table.id),
    index("order_events_notification_id_idx").on(table.notificationId),
    // L5: a dispute names the payment; the order is the one its `paid` entry belongs to.
    index("order_events_paid_payment_ref_idx")
      .on(sql`(${table.detail}->>'payment_ref')`)
      .where(sql`${table.type} = 'paid'`),
  ],
);

// H3: replay-missing reads 30 days of published order events by time; a BRIN index costs
// next to nothing per insert, as rows arrive in time order.
export const outbox = outboxTable(api, (table) => [
  index("outbox_created_at_brin_idx").using("brin", table.createdAt),
]);

export const endpointStatuses = ["enabled", "disabled"] as const;
export const disabledReasons = ["manual", "gone", "failing"] as const;

/** H1: where an admin asked the api to deliver order events, signed with the endpoint's secret. */
export const webhookEndpoints = api.table("webhook_endpoints", {
  id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
  url: text("url").notNull(),
  /** M3 event names (`orders.paid`, ...) or `*` for all of them. */
  events: text("events").array().notNull(),
  description: text("description"),
  status: text("status", { enum: endpointStatuses }).notNull().default("enabled"),
  disabledReason: text("disabled_reason", { enum: disabledReasons }),
  /** `whsec_` + base64: it must be kept to sign, so it is stored, and never shown again. */
  secret: text("secret").notNull(),
  /** The secret before the last rotation, still signing until `previous_secret_until` (H1). */
  previousSecret: text("previous_secret"),
  previousSecretUntil: timestamp("previous_secret_until", { withTimezone: true }),
  /** The first failed attempt since the last success; disables the endpoint when old (H3). */
  failingSince: timestamp("failing_since", { withTimezone: true }),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

export const deliveryStatuses = ["pending", "succeeded", "failed"] as const;
export type DeliveryStatus = (typeof deliveryStatuses)[number];

/**
 * H2, H6: one event for one endpoint, written in the transaction of the event's outbox row; its
 * schedule is data (`next_attempt_at`) and a dispatcher holds it by a lease (`leased_until`)
 * while it sends, so an api killed mid-attempt leaves a lease that expires, not a lost delivery.
 */
export const webhookDeliveries = api.table(
  "webhook_deliveries",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    endpointId: bigint("endpoint_id", { mode: "number" })
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    eventType: text("event_type").notNull(),
    /** The M3 message id: the `webhook-id` of every attempt. */
    messageId: text("message_id").notNull(),
    orderId: bigint("order_id", { mode: "number" }),
    payload: jsonb("payload").notNull(),
    status: text("status", { enum: deliveryStatuses }).notNull().default("pending"),
    /** The automatic attempts: the retry schedule's position (H3). */
    attempts: integer("attempts").notNull().default(0),
    /** Attempts an admin asked for (H4 retry): on the log, but no slot of the schedule. */
    manualAttempts: integer("manual_attempts").notNull().default(0),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true }).notNull().defaultNow(),
    leasedUntil: timestamp("leased_until", { withTimezone: true }),
    lastStatusCode: integer("last_status_code"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    // H6: one delivery per event and endpoint, whoever writes it and however often.
    uniqueIndex("webhook_deliveries_endpoint_message_idx").on(table.endpointId, table.messageId),
    // H5: a claim reads each endpoint's due deliveries in this order and stops after a few, so
    // its cost does not grow with the backlog; a delivery leased or waiting behind an earlier one
    // of its order is not due (its `next_attempt_at` is in the future), so it is not read again.
    index("webhook_deliveries_endpoint_due_idx")
      .on(table.endpointId, table.nextAttemptAt, table.id)
      .where(sql`${table.status} = 'pending'`),
    // H5: the attempts in flight per endpoint, counted from the few rows that hold a lease.
    index("webhook_deliveries_leased_idx")
      .on(table.endpointId, table.leasedUntil)
      .where(sql`${table.status} = 'pending' and ${table.leasedUntil} is not null`),
    // H5: the earlier pending delivery of the same order to the same endpoint, found by index;
    // `webhook.test` events (no order) are one queue per endpoint, order 0.
    index("webhook_deliveries_order_queue_idx")
      .on(table.endpointId, sql`coalesce(${table.orderId}, 0)`, table.id)
      .where(sql`${table.status} = 'pending'`),
    index("webhook_deliveries_endpoint_status_id_idx").on(table.endpointId, table.status, table.id),
    // U7: "did the warehouse hear of order N?" reads an order's deliveries to every endpoint.
    index("webhook_deliveries_order_id_idx").on(table.orderId, table.id),
  ],
);

/** H4: every attempt of a delivery, with what the receiver answered (its first KiB). */
export const webhookAttempts = api.table(
  "webhook_attempts",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    deliveryId: bigint("delivery_id", { mode: "number" })
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: "cascade" }),
    at: timestamp("at", { withTimezone: true }).notNull().defaultNow(),
    statusCode: integer("status_code"),
    durationMs: integer("duration_ms").notNull(),
    error: text("error"),
    responseBody: text("response_body"),
  },
  (table) => [index("webhook_attempts_delivery_id_idx").on(table.deliveryId, table.id)],
);

/** V5: the admins' actions that move no order (`shared/src/platform/audit-log.ts`). */
export const auditLog = auditLogTable(api);

/**
 * N16: the console's one-time sign-in codes. Only the code's SHA-256 is kept, and the token sealed
 * under a key made from the code, until the code is exchanged (the row is deleted then) or
 * expires (deleted by the next use).
 */
export const consoleSignInCodes = api.table("console_sign_in_codes", {
  codeHash: text("code_hash").primaryKey(),
  token: text("token").notNull(),
  expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

export const refundStatuses = ["requested", "pending", "succeeded", "failed"] as const;
export type RefundStatus = (typeof refundStatuses)[number];
export const refundReasons = ["requested_by_customer", "duplicate", "fraudulent", "other"] as const;

/**
 * F1–F4: a refund an admin asked for through the payment's provider. Written with its
 * `orders.refund_requested` in one transaction, the order row locked, so the refunds of an order
 * never ask for more than it was paid; its status moves forward only (requested, pending, then
 * succeeded or failed) as the payments service reports the provider's answers.
 */
export const refunds = api.table(
  "refunds",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    orderId: bigint("order_id", { mode: "number" })
      .notNull()
      .references(() => orders.id),
    amount: bigint("amount", { mode: "number" }).notNull(),
    currency: text("currency").notNull(),
    status: text("status", { enum: refundStatuses }).notNull().default("requested"),
    /** G5: the provider and its id of the payment the refund returns. */
    provider: text("provider").notNull(),
    paymentRef: text("payment_ref").notNull(),
    /** The provider's id of the refund (Stripe `re_...`, Adyen's pspReference), once known. */
    providerRefundId: text("provider_refund_id"),
    reason: text("reason", { enum: refundReasons }),
    /** F3: the provider's words for a refusal. */
    failureReason: text("failure_reason"),
    /** V5: who asked and why. */
    note: text("note").notNull(),
    actor: text("actor").notNull(),
    requestedAt: timestamp("requested_at", { withTimezone: true }).notNull().defaultNow(),
    settledAt: timestamp("settled_at", { withTimezone: true }),
  },
  (table) => [
    index("refunds_order_id_idx").on(table.orderId, table.id),
    // F3: Adyen's REFUND notification names the refund by its own pspReference.
    index("refunds_provider_refund_id_idx").on(table.provider, table.providerRefundId),
    check("refunds_amount_check", sql`${table.amount} > 0`),
    check(
      "refunds_status_check",
      sql`${table.status} in ('requested', 'pending', 'succeeded', 'failed')`,
    ),
  ],
);

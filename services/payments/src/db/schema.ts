import { outboxTable } from "@commerce/shared/platform/outbox/table";
import { sql } from "drizzle-orm";
import { bigint, index, pgSchema, text, timestamp } from "drizzle-orm/pg-core";

export const payments = pgSchema("payments");

/** Every accepted payment notification, keyed by its notification id (W4), raw body kept (W5). */
export const notifications = payments.table(
  "notifications",
  {
    id: text("id").primaryKey(),
    /** G1: who sent it: `generic` (the seed's format), `stripe` or `adyen`. */
    provider: text("provider").notNull().default("generic"),
    event: text("event").notNull(),
    /** G2: null when the notification names no order (or not as a positive integer). */
    orderId: bigint("order_id", { mode: "number" }),
    /** M1: the provider's id of the payment it is about; null for rows from before M1. */
    paymentRef: text("payment_ref"),
    /** Null for an event that carries no amount (G2: stored, never a message). */
    amount: bigint("amount", { mode: "number" }),
    currency: text("currency"),
    rawBody: text("raw_body").notNull(),
    receivedAt: timestamp("received_at", { withTimezone: true }).notNull().defaultNow(),
    sourceIp: text("source_ip").notNull(),
    /** O8: the W3C traceparent of the request that delivered it; null for rows older than O8. */
    traceparent: text("traceparent"),
  },
  (table) => [
    index("notifications_order_id_idx").on(table.orderId),
    // V3: the operator's list, newest first.
    index("notifications_received_at_idx").on(table.receivedAt, table.id),
    index("notifications_provider_received_at_idx").on(table.provider, table.receivedAt, table.id),
  ],
);

/** Every row carries its notification id; V3 finds a notification's message and replays by it. */
export const outbox = outboxTable(payments, (table) => [
  index("outbox_notification_id_idx").on(sql`(${table.payload}->>'notification_id')`),
]);

import { sql } from "drizzle-orm";
import {
  bigserial,
  type ExtraConfigColumn,
  type IndexBuilder,
  index,
  jsonb,
  type PgSchema,
  text,
  timestamp,
} from "drizzle-orm/pg-core";

/**
 * The transactional outbox (microservices.io): a row written in the same transaction as the change
 * it announces, published to JetStream by the relay, marked published after the ack. Each service
 * owns one in its own Postgres schema; `moreIndexes` adds the lookups only that service makes.
 */
export function outboxTable(
  schema: PgSchema,
  moreIndexes: (table: { payload: ExtraConfigColumn }) => IndexBuilder[] = () => [],
) {
  return schema.table(
    "outbox",
    {
      id: bigserial("id", { mode: "number" }).primaryKey(),
      subject: text("subject").notNull(),
      messageId: text("message_id").notNull(),
      payload: jsonb("payload").notNull(),
      /** NATS headers to send with the message, e.g. the `traceparent` it continues (O8). */
      headers: jsonb("headers").$type<Record<string, string>>(),
      createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
      publishedAt: timestamp("published_at", { withTimezone: true }),
    },
    (table) => [
      index("outbox_unpublished_idx").on(table.id).where(sql`${table.publishedAt} is null`),
      ...moreIndexes(table),
    ],
  );
}

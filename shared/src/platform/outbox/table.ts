import { sql } from "drizzle-orm";
import {
  bigserial,
  type ExtraConfigColumn,
  type IndexBuilder,
  index,
  integer,
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
  moreIndexes: (table: {
    id: ExtraConfigColumn;
    payload: ExtraConfigColumn;
    createdAt: ExtraConfigColumn;
    publishedAt: ExtraConfigColumn;
  }) => IndexBuilder[] = () => [],
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
      /** N10: failed publications for a reason that will not change (BAD_HEADER, ...). */
      attempts: integer("attempts").notNull().default(0),
      /** N10: the code of the last such failure. */
      lastError: text("last_error"),
      /** N10: set aside after `deadAfterAttempts` such failures; the relay no longer tries it. */
      deadAt: timestamp("dead_at", { withTimezone: true }),
    },
    (table) => [
      index("outbox_unpublished_idx").on(table.id).where(sql`${table.publishedAt} is null`),
      ...moreIndexes(table),
    ],
  );
}

import {
  bigint,
  type ExtraConfigColumn,
  type IndexBuilder,
  jsonb,
  type PgSchema,
  text,
  timestamp,
} from "drizzle-orm/pg-core";

/**
 * V5: who did what that moves no order (webhook endpoint changes, retries, replays): one row per
 * action, with the admin's token `sub` and the reason given; never a secret. Each service keeps
 * its own in its own Postgres schema; `indexes` adds the lookups that service makes.
 */
export function auditLogTable(
  schema: PgSchema,
  indexes: (table: { id: ExtraConfigColumn; at: ExtraConfigColumn }) => IndexBuilder[] = () => [],
) {
  return schema.table(
    "audit_log",
    {
      id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
      at: timestamp("at", { withTimezone: true }).notNull().defaultNow(),
      actor: text("actor").notNull(),
      action: text("action").notNull(),
      target: text("target").notNull(),
      detail: jsonb("detail").notNull().default({}),
    },
    indexes,
  );
}

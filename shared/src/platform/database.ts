import type { MigrationMeta } from "drizzle-orm/migrator";
import postgres from "postgres";
import { applyMigrations } from "./migrator";

export type Sql = postgres.Sql;

/**
 * Reconnect attempts after a failed one wait 0.1 s, doubling up to 1 s. postgres.js's own back-off
 * grows to 20 s, and a query waits for its connection's next attempt: during an outage requests
 * took 13 s to answer 503, and readiness came back 14 s after PostgreSQL did.
 */
const reconnectBackoff = (failures: number) => Math.min(0.05 * 2 ** failures, 1);

/**
 * A pool of `max` connections: the caller's, else the URL's `?max=N` (postgres.js would read it as
 * a string, and `new Array("4")` is one connection), else 10. `npm start` asks for one per
 * embedded PGlite, which is a single session. With `schema`, every connection resolves names in
 * that schema and then the built-ins only (N14), whatever the role's own setting.
 */
export function connectDatabase(
  url: string,
  {
    max = Number(/[?&]max=(\d+)/.exec(url)?.[1] ?? 10),
    schema,
  }: { max?: number; schema?: string } = {},
): Sql {
  return postgres(url, {
    max,
    ...(schema && { connection: { search_path: `"${schema}", pg_catalog` } }),
    onnotice: () => {},
    connect_timeout: 5,
    idle_timeout: 60,
    backoff: reconnectBackoff,
  });
}

/**
 * Applies the service's pending drizzle-kit migrations to its own Postgres schema, holding an
 * advisory lock so replicas that start together apply them once. The migrations come embedded
 * (`drizzle/migrations.json`, written by scripts/embed-migrations.ts), so a compiled binary
 * needs no files beside it.
 */
export async function migrateSchema(
  sql: Sql,
  { schema, migrations }: { schema: string; migrations: MigrationMeta[] },
) {
  // A pool of one has no second connection to reserve; its only one holds the lock then.
  const reserved = sql.options.max > 1 ? await sql.reserve() : undefined;
  const lock = reserved ?? sql;
  try {
    await lock`select pg_advisory_lock(hashtext(${`migrate:${schema}`}))`;
    await applyMigrations(sql, migrations, {
      // Bookkeeping lives apart: drizzle-kit's first migration creates the service's schema itself.
      migrationsSchema: "drizzle",
      migrationsTable: `${schema}_migrations`,
    });
  } finally {
    await lock`select pg_advisory_unlock(hashtext(${`migrate:${schema}`}))`.catch(() => {});
    reserved?.release();
  }
}

/**
 * A timestamp column as the API and the messages write it: ISO 8601 in UTC with milliseconds,
 * the text `Date.prototype.toISOString()` gives, whatever the driver's parsing. `column` may be
 * qualified (`o.paid_at`).
 */
export const isoTimestamp = (sql: Sql, column: string) =>
  sql`to_char(${sql(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export async function databaseIsUp(sql: Sql): Promise<boolean> {
  await sql`select 1`;
  return true;
}

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
 * N14 (v5): every wait on a lock has a timeout. A statement waiting longer than this for a row or
 * table lock fails with SQLSTATE 55P03 (`lockTimedOut`: 503 to a request, a later redelivery to a
 * message); the migration lock and a placement set shorter ones for their transaction.
 */
export const defaultLockTimeoutMs = 15_000;

/**
 * A pool of `max` connections: the caller's, else the URL's `?max=N` (postgres.js would read it as
 * a string, and `new Array("4")` is one connection), else 10. `npm start` asks for one per
 * embedded PGlite, which is a single session. With `schema`, every connection resolves names in
 * that schema and then the built-ins only (N14), whatever the role's own setting. Every
 * connection waits at most `defaultLockTimeoutMs` for a lock.
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
    connection: {
      lock_timeout: defaultLockTimeoutMs,
      ...(schema && { search_path: `"${schema}", pg_catalog` }),
    },
    onnotice: () => {},
    connect_timeout: 5,
    idle_timeout: 60,
    backoff: reconnectBackoff,
  });
}

/**
 * N14 (v5): the table whose lock is the migration lock, in the service's own schema. Advisory lock
 * keys are database-wide and any role may take any key; a table of the service's schema can be
 * locked only by a role with rights on it, so the other service's role cannot hold it.
 */
export const migrationLockTable = "migration_lock";

/** How long a replica waits for the migration lock (or a migration for its tables) before retrying. */
const migrationLockTimeout = "10s";

/**
 * Applies the service's pending drizzle-kit migrations to its own Postgres schema in one
 * transaction that first locks `<schema>.migration_lock`, so replicas that start together apply
 * them once; a replica that waits longer than `migrationLockTimeout` fails with SQLSTATE 55P03
 * (`lockTimedOut`) and tries again later. The migrations come embedded
 * (`drizzle/migrations.json`, written by scripts/embed-migrations.ts), so a compiled binary
 * needs no files beside it.
 */
export async function migrateSchema(
  sql: Sql,
  { schema, migrations }: { schema: string; migrations: MigrationMeta[] },
) {
  await ensureMigrationLock(sql, schema);
  await applyMigrations(sql, migrations, {
    // Bookkeeping lives apart: drizzle-kit's first migration creates the service's schema itself.
    migrationsSchema: "drizzle",
    migrationsTable: `${schema}_migrations`,
    lock: async (tx) => {
      await tx`select pg_catalog.set_config('lock_timeout', ${migrationLockTimeout}, true)`;
      await tx`lock table ${tx(schema)}.${tx(migrationLockTable)} in exclusive mode`;
    },
  });
}

/**
 * The service's schema and its lock table, made when missing (the deployments' init scripts make
 * the schema, owned by the service's role; a development database has nothing yet). Two replicas
 * making them at once on a fresh database: the one that loses finds them made on its next look.
 */
async function ensureMigrationLock(sql: Sql, schema: string) {
  for (let attempt = 1; ; attempt++) {
    try {
      const [{ schemaMade, lockMade }] = await sql<{ schemaMade: boolean; lockMade: boolean }[]>`
        select exists (select from pg_catalog.pg_namespace where nspname = ${schema}) as "schemaMade",
          pg_catalog.to_regclass(${`"${schema}"."${migrationLockTable}"`}) is not null as "lockMade"`;
      if (!schemaMade) await sql`create schema if not exists ${sql(schema)}`;
      if (!lockMade)
        await sql`create table if not exists ${sql(schema)}.${sql(migrationLockTable)} ()`;
      return;
    } catch (error) {
      const code = (error as { code?: string }).code ?? "";
      // unique_violation on the catalog, duplicate_schema, duplicate_table, or duplicate_object
      // (the table's row type): the other one won.
      if (attempt < 5 && ["23505", "42P06", "42P07", "42710"].includes(code)) continue;
      throw error;
    }
  }
}

/** N14 (v5): a wait on a lock outlasted its `lock_timeout` (SQLSTATE 55P03): try again later. */
export function lockTimedOut(error: unknown): boolean {
  const cause = (error as { cause?: unknown })?.cause;
  if (cause && cause !== error && lockTimedOut(cause)) return true;
  return (error as { code?: unknown })?.code === "55P03";
}

/**
 * A timestamp column as the API and the messages write it: ISO 8601 in UTC with milliseconds,
 * the text `Date.prototype.toISOString()` gives, whatever the driver's parsing. `column` may be
 * qualified (`o.paid_at`).
 */
export const isoTimestamp = (sql: Sql, column: string) =>
  sql`to_char(${sql(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * X2, W6: the error says there is no writable database right now (it is down, restarting, a
 * standby or a demoted primary, or the connection broke, perhaps during COMMIT so the outcome is
 * unknown), not that the request was wrong: the answer is 503 and the caller retries, never 500.
 * drizzle wraps the driver's error as its cause.
 */
/** A socket that broke or never reached the server (besides ECONNREFUSED, ECONNRESET, ...). */
const socketErrors = new Set([
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ERR_SOCKET_CLOSED",
  "ERR_STREAM_DESTROYED",
]);

export function databaseUnavailable(error: unknown): boolean {
  const cause = (error as { cause?: unknown })?.cause;
  if (cause && cause !== error && databaseUnavailable(cause)) return true;
  const code = (error as { code?: unknown })?.code;
  return (
    typeof code === "string" &&
    (code.startsWith("CONNECT") || // the driver's CONNECT_TIMEOUT, CONNECTION_CLOSED/ENDED/DESTROYED
      code.startsWith("ECONN") ||
      socketErrors.has(code) ||
      code.startsWith("08") || // connection exception
      code.startsWith("57P") || // admin / crash shutdown, cannot connect now (starting, in recovery)
      code === "25006" || // read_only_sql_transaction: a standby, or a primary demoted meanwhile
      code === "53300") // too many connections
  );
}

/**
 * What an operator can do about a database error that stops a service at start, in words (the
 * log line also has its SQLSTATE): the credentials, the database's name or the role's rights in
 * `DATABASE_URL`. Undefined for any other error.
 */
export function startRefusal(error: unknown): string | undefined {
  const code = (error as { code?: unknown })?.code;
  if (code === "28P01") return "the database refused the password in DATABASE_URL";
  if (code === "28000") return "the database refused the user or client address of DATABASE_URL";
  if (code === "3D000") return "the database named in DATABASE_URL does not exist";
  if (code === "42501") return "the user of DATABASE_URL may not create the service's tables";
  const cause = (error as { cause?: unknown })?.cause;
  return cause && cause !== error ? startRefusal(cause) : undefined;
}

/**
 * X2, O2: the database is reachable and writable (not a standby). Probes asked for while one is
 * running share it, so a burst of /ready polls costs one query; a result is not kept beyond
 * that, so /ready turns 503 as soon as the database goes (a failed probe counts as down).
 */
export function primaryProbe(sql: Sql): () => Promise<boolean> {
  let pending: Promise<boolean> | undefined;
  return () => {
    pending ??= sql`select pg_is_in_recovery() as standby`
      .then(([row]) => !row.standby)
      .catch(() => false)
      .finally(() => {
        pending = undefined;
      });
    return pending;
  };
}

const probes = new WeakMap<Sql, () => Promise<boolean>>();

/** O2's database check: `primaryProbe` of this pool (one per pool, so its cache is shared). */
export function databaseIsUp(sql: Sql): Promise<boolean> {
  let probe = probes.get(sql);
  if (!probe) {
    probe = primaryProbe(sql);
    probes.set(sql, probe);
  }
  return probe();
}

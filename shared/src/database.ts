import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";

export type Sql = postgres.Sql;

export function connectDatabase(url: string, { max = 10 }: { max?: number } = {}): Sql {
  return postgres(url, {
    max,
    onnotice: () => {},
    connect_timeout: 5,
    idle_timeout: 60,
  });
}

/**
 * Applies the service's pending drizzle-kit migrations to its own Postgres schema, holding an
 * advisory lock so replicas that start together apply them once.
 */
export async function migrateSchema(
  sql: Sql,
  { schema, migrationsFolder }: { schema: string; migrationsFolder: string },
) {
  const lock = await sql.reserve();
  try {
    await lock`select pg_advisory_lock(hashtext(${`migrate:${schema}`}))`;
    await migrate(drizzle(sql), {
      migrationsFolder,
      // Bookkeeping lives apart: drizzle-kit's first migration creates the service's schema itself.
      migrationsSchema: "drizzle",
      migrationsTable: `${schema}_migrations`,
    });
  } finally {
    await lock`select pg_advisory_unlock(hashtext(${`migrate:${schema}`}))`.catch(() => {});
    lock.release();
  }
}

export async function databaseIsUp(sql: Sql): Promise<boolean> {
  await sql`select 1`;
  return true;
}

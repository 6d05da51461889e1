import type { MigrationMeta } from "drizzle-orm/migrator";
import type postgres from "postgres";

/**
 * drizzle's migrator, minus what a service's role may not do (N14): drizzle runs `CREATE SCHEMA
 * IF NOT EXISTS drizzle` and `CREATE TABLE IF NOT EXISTS` on every start, and PostgreSQL checks
 * the CREATE privilege before it looks whether the object exists, so a role without CREATE on the
 * database could not start. Here each is run only when its object is missing, and a migration's
 * `CREATE SCHEMA "<own>"` is skipped when the deployment's init script made the schema already.
 * The bookkeeping is drizzle's own table layout and rule (the newest `created_at` applied), so a
 * database migrated by drizzle's migrator goes on here unchanged. The bookkeeping is made first,
 * each statement on its own (a transaction that lost the race to make it would not see it made:
 * its catalog cache still says missing); then one transaction runs `lock` (the caller's migration
 * lock, N14 v5), reads what is applied and applies the rest, all or none.
 */
export async function applyMigrations(
  sql: postgres.Sql,
  migrations: MigrationMeta[],
  {
    migrationsSchema,
    migrationsTable,
    lock = async () => {},
  }: {
    migrationsSchema: string;
    migrationsTable: string;
    lock?: (tx: postgres.TransactionSql) => Promise<void>;
  },
) {
  const qualified = `${migrationsSchema}.${migrationsTable}`;
  if (!(await schemaExists(sql, migrationsSchema)))
    await madeByWhoeverWasFirst(sql`create schema if not exists ${sql(migrationsSchema)}`);
  const [{ present }] = await sql<{ present: boolean }[]>`
    select pg_catalog.to_regclass(${`"${migrationsSchema}"."${migrationsTable}"`}) is not null as present`;
  if (!present)
    await madeByWhoeverWasFirst(sql`create table if not exists ${sql(qualified)} (
      id serial primary key, hash text not null, created_at bigint)`);
  await sql.begin(async (tx) => {
    await lock(tx);
    // Read once the lock is held: a replica that waited sees what the one before it applied.
    const [last] = await tx<{ created_at: string }[]>`
      select created_at from ${tx(qualified)} order by created_at desc limit 1`;
    const pending = migrations.filter((m) => !last || Number(last.created_at) < m.folderMillis);
    for (const migration of pending) {
      for (const statement of migration.sql) {
        const made = /^\s*CREATE SCHEMA "([^"]+)";?\s*$/i.exec(statement)?.[1];
        if (made !== undefined && (await schemaExists(tx, made))) continue;
        await tx.unsafe(statement);
      }
      await tx`insert into ${tx(qualified)} (hash, created_at)
        values (${migration.hash}, ${migration.folderMillis})`;
    }
  });
}

async function schemaExists(sql: postgres.Sql | postgres.TransactionSql, name: string) {
  const rows = await sql`select 1 from pg_catalog.pg_namespace where nspname = ${name}`;
  return rows.length > 0;
}

/**
 * O10: both services share the `drizzle` schema, and each takes only its own migration lock, so
 * on a fresh database both may create it at once. `if not exists` does not make that safe: the
 * second `CREATE` fails on the catalog's unique index (23505) or says the object exists (42P06
 * schema, 42P07 table). Either way the object is there, which is all the caller needs.
 */
async function madeByWhoeverWasFirst(create: Promise<unknown>): Promise<void> {
  try {
    await create;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== "23505" && code !== "42P06" && code !== "42P07") throw error;
  }
}

import type { Sql } from "@commerce/shared/database";
import { drizzle, type PostgresJsDatabase } from "drizzle-orm/postgres-js";
import * as schema from "./schema";

export type Database = PostgresJsDatabase<typeof schema>;
export type Transaction = Parameters<Parameters<Database["transaction"]>[0]>[0];
/** Either the database or a transaction on it: services accept both. */
export type Executor = Database | Transaction;

export const createDatabase = (sql: Sql): Database => drizzle(sql, { schema });

export { default as migrations } from "../../drizzle/migrations.json";

/**
 * Builds a service's hot statements once per database (or transaction) and prepares them, so
 * drizzle builds their SQL once and PostgreSQL parses and plans them once per connection.
 */
export function preparedFor<T>(build: (db: Executor) => T): (db: Executor) => T {
  const built = new WeakMap<Executor, T>();
  return (db) => {
    let statements = built.get(db);
    if (!statements) {
      statements = build(db);
      built.set(db, statements);
    }
    return statements;
  };
}

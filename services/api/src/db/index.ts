import type { Sql } from "@commerce/shared/platform/database";
import { drizzle, type PostgresJsDatabase } from "drizzle-orm/postgres-js";
import * as schema from "./schema";

export type Database = PostgresJsDatabase<typeof schema>;
export type Transaction = Parameters<Parameters<Database["transaction"]>[0]>[0];
/** Either the database or a transaction on it: services accept both. */
export type Executor = Database | Transaction;

export const createDatabase = (sql: Sql): Database => drizzle(sql, { schema });

export { default as migrations } from "../../drizzle/migrations.json";

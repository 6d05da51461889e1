import type { Sql } from "@commerce/shared/database";
import { drizzle, type PostgresJsDatabase } from "drizzle-orm/postgres-js";
import * as schema from "./schema";

export type Database = PostgresJsDatabase<typeof schema>;

export const createDatabase = (sql: Sql): Database => drizzle(sql, { schema });

export { default as migrations } from "../../drizzle/migrations.json";

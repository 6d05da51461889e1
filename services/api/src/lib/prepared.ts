import type { Sql } from "@commerce/shared/platform/database";
import { drizzle } from "drizzle-orm/postgres-js";
import type { Executor } from "../db";
import * as schema from "../db/schema";

/** A drizzle instance without a connection: the process's statements are built on it, once. */
const builder = drizzle.mock({ schema });
export type StatementBuilder = typeof builder;

type Statement = { execute(values?: Record<string, unknown>): Promise<unknown> };

/** The postgres.js client behind the database or a transaction (drizzle keeps it on its session). */
export const clientOf = (executor: Executor) =>
  (executor as unknown as { session: { client: Sql } }).session.client;

/**
 * Statements built and prepared once per process, run on the database or inside the caller's
 * transaction. drizzle ties a prepared query to the client it was built on, so each run borrows
 * the query with the caller's client instead of building it again; postgres.js then parses and
 * plans its text once per connection.
 */
export function preparedStatements<T extends Record<string, Statement>>(
  build: (db: StatementBuilder) => T,
) {
  const built = build(builder);
  return <K extends keyof T>(
    executor: Executor,
    name: K,
    values?: Parameters<T[K]["execute"]>[0],
  ): ReturnType<T[K]["execute"]> => {
    const bound = Object.create(built[name]) as T[K] & { client: Sql };
    bound.client = clientOf(executor);
    return bound.execute(values) as ReturnType<T[K]["execute"]>;
  };
}

import { afterAll } from "bun:test";
import { connectDatabase } from "@commerce/shared/platform/database";
import { testDatabaseUrl, unique } from "./basics";
import { startStack } from "./processes";

/**
 * A database of its own on the test server, so "no row changed" can be checked over whole tables
 * while other test files write to theirs. Dropped at the end.
 */
export async function privateDatabase() {
  const name = unique("hostile_");
  const admin = connectDatabase(testDatabaseUrl, { max: 1 });
  await admin.unsafe(`create database ${name}`);
  const url = new URL(testDatabaseUrl);
  url.pathname = `/${name}`;
  const sql = connectDatabase(url.toString(), { max: 5 });
  return {
    sql,
    url: url.toString(),
    async drop() {
      await sql.end({ timeout: 5 });
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end({ timeout: 5 });
    },
  };
}

/**
 * Both services as processes (`startStack` with `options`) on a database of their own, for the
 * calling test file: the stack stopped and the database dropped after its tests.
 */
export async function privateStackForFile(options: Parameters<typeof startStack>[0] = {}) {
  const database = await privateDatabase();
  const stack = await startStack({ ...options, databaseUrl: database.url }).catch(async (error) => {
    await database.drop();
    throw error;
  });
  afterAll(async () => {
    await stack.stop();
    await database.drop();
  });
  return { stack, database };
}

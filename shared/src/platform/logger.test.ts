import { afterAll, describe, expect, test } from "bun:test";
import { testDatabaseUrl } from "@commerce/testing/basics";
import { sql as sqlText } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import { connectDatabase } from "./database";
import { describeError } from "./logger";

const sql = connectDatabase(testDatabaseUrl, { max: 1 });
afterAll(() => sql.end());

const failureOf = async (query: () => Promise<unknown>) => {
  try {
    await query();
  } catch (error) {
    return error;
  }
  throw new Error("the query did not fail");
};

describe("error descriptions", () => {
  test("N3: a PostgreSQL error whose message quotes a parameter is logged by SQLSTATE alone", async () => {
    const secret = "card-4242424242424242";
    const error = await failureOf(() => sql`select ${secret}::int`);
    expect(String((error as Error).message)).toContain(secret);
    const described = describeError(error);
    expect(described).toEqual({
      error: "database error",
      error_name: "PostgresError",
      error_code: "22P02",
    });
  });

  test("N3: a drizzle query error (SQL and parameters in its message) is logged by the cause's SQLSTATE", async () => {
    const secret = "card-4242424242424242";
    const db = drizzle(sql);
    const error = await failureOf(() => db.execute(sqlText`select ${secret}::int as nope`));
    expect((error as Error).message).toContain("select");
    const described = JSON.stringify(describeError(error));
    expect(described).not.toContain(secret);
    expect(described).not.toContain("select");
    expect(describeError(error)).toMatchObject({ error: "database error", error_code: "22P02" });
  });

  test("N3: other errors keep their message", () => {
    expect(describeError(new TypeError("boom"))).toEqual({
      error: "boom",
      error_name: "TypeError",
    });
  });
});

import { describe, expect, test } from "bun:test";
import { eventually, testDatabaseUrl } from "@commerce/testing/basics";
import { connectDatabase } from "./database";

describe("postgres.js, as installed with patches/postgres+3.4.9.patch", () => {
  test("W6, M2: a transaction whose connection dies rejects with CONNECTION_CLOSED; the process and the pool carry on (porsager/postgres#1208)", async () => {
    const sql = connectDatabase(testDatabaseUrl, { max: 2 });
    const killer = connectDatabase(testDatabaseUrl, { max: 1 });
    try {
      let pid: number | undefined;
      const transaction = sql.begin(async (tx) => {
        [{ pid }] = await tx`select pg_backend_pid() as pid`;
        await tx`select pg_sleep(5)`;
      });
      await eventually(async () => pid);
      await killer`select pg_terminate_backend(${pid as number})`;
      await expect(transaction).rejects.toMatchObject({ code: "CONNECTION_CLOSED" });
      // Unpatched, the ROLLBACK's deferred write throws here, outside any promise, and the process dies.
      await Bun.sleep(100);
      expect((await sql`select 1 as one`)[0].one).toBe(1);
    } finally {
      await Promise.all([sql.end({ timeout: 1 }), killer.end({ timeout: 1 })]);
    }
  });
});

import { expect, test } from "bun:test";
import { testDatabaseUrl } from "@commerce/testing/basics";
import { connectDatabase, defaultLockTimeoutMs } from "./database";

test("the pool size is the caller's, else the URL's ?max=N, else 10", async () => {
  const pools = [
    connectDatabase("postgres://root@127.0.0.1:5432/test"),
    connectDatabase("postgres://root@127.0.0.1:5432/test?max=4"),
    connectDatabase("postgres://root@127.0.0.1:5432/test?max=4", { max: 2 }),
  ];
  expect(pools.map((sql) => sql.options.max)).toEqual([10, 4, 2]);
  await Promise.all(pools.map((sql) => sql.end()));
});

test("N14 (v5): every connection of a pool waits at most the default lock timeout for a lock, whatever the server's setting", async () => {
  const sql = connectDatabase(testDatabaseUrl, { max: 2, schema: "api" });
  try {
    const settings = await Promise.all(
      [1, 2].map(() => sql.begin((tx) => tx`show lock_timeout`).then(([row]) => row.lock_timeout)),
    );
    expect(defaultLockTimeoutMs).toBe(15_000);
    expect(settings).toEqual(["15s", "15s"]);
  } finally {
    await sql.end();
  }
});

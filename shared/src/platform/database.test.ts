import { expect, test } from "bun:test";
import { connectDatabase } from "./database";

test("the pool size is the caller's, else the URL's ?max=N, else 10", async () => {
  const pools = [
    connectDatabase("postgres://root@127.0.0.1:5432/test"),
    connectDatabase("postgres://root@127.0.0.1:5432/test?max=4"),
    connectDatabase("postgres://root@127.0.0.1:5432/test?max=4", { max: 2 }),
  ];
  expect(pools.map((sql) => sql.options.max)).toEqual([10, 4, 2]);
  await Promise.all(pools.map((sql) => sql.end()));
});

import { afterAll, beforeAll, expect, test } from "bun:test";
import { unique } from "@commerce/testing/basics";
import { type ApiHarness, startApi } from "@commerce/testing/in-process";
import { asc, eq, sql } from "drizzle-orm";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { listCounts, products } from "../db/schema";
import { preparedStatements } from "./prepared";

let api: ApiHarness;
beforeAll(async () => {
  api = await startApi();
});
afterAll(async () => {
  await api?.close();
});

// The shapes the hot reads use: plain columns, a computed column with its own decoder, and a
// left-joined table whose object must be null when the join found no row.
const statements = (db: Parameters<Parameters<typeof preparedStatements>[0]>[0]) => {
  const total = db.$with("total").as(
    db
      .select({ n: sql<number>`coalesce(sum(${listCounts.n}), 0)::bigint`.mapWith(Number).as("n") })
      .from(listCounts)
      .where(eq(listCounts.key, sql.placeholder("key"))),
  );
  return {
    joined: db
      .with(total)
      .select({
        total: total.n,
        row: { id: products.id, name: products.name, stock: products.stock },
      })
      .from(total)
      .leftJoin(products, eq(products.category, sql.placeholder("category")))
      .orderBy(asc(products.id))
      .prepare("prepared_test_joined"),
    byId: db
      .select({
        id: products.id,
        price: products.price,
        doubled: sql<number>`${products.price} * 2`,
      })
      .from(products)
      .where(eq(products.id, sql.placeholder("id")))
      .prepare("prepared_test_by_id"),
  };
};
const run = preparedStatements(statements);

test("P1, P4: a prepared select maps its rows as drizzle's own execute does, a missing joined row as null", async () => {
  const category = unique("prepared");
  const [stocked, untracked] = await api.db
    .insert(products)
    .values([
      { name: "with stock", price: 250, category, stock: 3 },
      { name: "untracked", price: 100, category, stock: null },
    ])
    .returning({ id: products.id });
  // The same statements on the real database, run by drizzle's own execute.
  const viaDrizzle = statements(api.db as unknown as Parameters<typeof statements>[0]);
  for (const values of [
    { key: category, category },
    { key: category, category: unique("empty") },
  ]) {
    const ours = await run(api.db, "joined", values);
    expect(ours).toEqual(await viaDrizzle.joined.execute(values));
  }
  const empty = await run(api.db, "joined", { key: "none", category: unique("empty") });
  expect(empty).toEqual([{ total: 0, row: null }]);
  const found = await run(api.db, "joined", { key: "none", category });
  expect(found.map((r) => r.row)).toEqual([
    { id: stocked.id, name: "with stock", stock: 3 },
    { id: untracked.id, name: "untracked", stock: null },
  ]);
  expect(await run(api.db, "byId", { id: stocked.id })).toEqual(
    await viaDrizzle.byId.execute({ id: stocked.id }),
  );
});

test("N3: a prepared select's database error carries the driver's error as drizzle's does", async () => {
  const error = await run(api.db, "byId", { id: "not a number" as unknown as number }).catch(
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DrizzleQueryError);
  expect(((error as Error).cause as { code?: string }).code).toBe("22P02");
});

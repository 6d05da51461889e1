import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  connectDatabase,
  migrateSchema,
  migrationLockTable,
} from "@commerce/shared/platform/database";
import { listCountMismatches } from "@commerce/testing/list-counts";
import { privateDatabase } from "@commerce/testing/private-database";
import { migrations } from ".";

let database: Awaited<ReturnType<typeof privateDatabase>>;
let counted: Awaited<ReturnType<typeof privateDatabase>>;
let fresh: Awaited<ReturnType<typeof privateDatabase>>;
beforeAll(async () => {
  database = await privateDatabase();
  counted = await privateDatabase();
  fresh = await privateDatabase();
});
afterAll(() => Promise.all([database?.drop(), counted?.drop(), fresh?.drop()]));

describe("api migrations", () => {
  test("R1: orders made before order lines existed become one-line orders; nothing is lost", async () => {
    const { sql } = database;
    await migrateSchema(sql, { schema: "api", migrations: migrations.slice(0, 1) });
    const [product] = await sql`
      insert into api.products (name, price, category) values ('Mug', 1250, 'cups') returning id`;
    const [open] = await sql`
      insert into api.orders (customer_id, product_id, qty, amount, currency)
      values ('alice', ${product.id}, 3, 3750, 'USD') returning id`;
    const [paid] = await sql`
      insert into api.orders (customer_id, product_id, qty, amount, currency, status, paid_at)
      values ('bob', ${product.id}, 1, 1250, 'EUR', 'paid', now()) returning id, paid_at`;

    await migrateSchema(sql, { schema: "api", migrations });

    const lines = await sql`
      select order_id, product_id, line, name, qty, unit_price, amount from api.order_items
      order by order_id`;
    expect([...lines]).toEqual([
      {
        order_id: open.id,
        product_id: product.id,
        line: 0,
        name: "Mug",
        qty: 3,
        unit_price: 1250,
        amount: "3750",
      },
      {
        order_id: paid.id,
        product_id: product.id,
        line: 0,
        name: "Mug",
        qty: 1,
        unit_price: 1250,
        amount: "1250",
      },
    ]);
    const orders = await sql`
      select id, customer_id, amount, currency, status, paid_at, cancel_reason from api.orders
      order by id`;
    expect([...orders]).toEqual([
      {
        id: open.id,
        customer_id: "alice",
        amount: "3750",
        currency: "USD",
        status: "created",
        paid_at: null,
        cancel_reason: null,
      },
      {
        id: paid.id,
        customer_id: "bob",
        amount: "1250",
        currency: "EUR",
        status: "paid",
        paid_at: paid.paid_at,
        cancel_reason: null,
      },
    ]);
    const [{ stock }] = await sql`select stock from api.products where id = ${product.id}`;
    expect(stock).toBeNull();
  });

  test("P4: the migration backfills list counters from existing rows, and the triggers keep them", async () => {
    const { sql } = counted;
    const before = migrations.findIndex((m) => m.sql.some((s) => s.includes("list_counts")));
    await migrateSchema(sql, { schema: "api", migrations: migrations.slice(0, before) });
    await sql`
      insert into api.products (name, price, category)
      select 'P' || g, 100, 'cat' || (g % 3) from generate_series(1, 50) g`;
    await sql`
      insert into api.orders (customer_id, amount, currency, status)
      select 'cust' || (g % 4), 100, 'USD', (array['created', 'paid', 'cancelled'])[1 + g % 3]
      from generate_series(1, 60) g`;

    await migrateSchema(sql, { schema: "api", migrations });
    expect(await listCountMismatches(sql)).toEqual([]);
    const [{ rows }] = await sql`select count(*)::int as rows from api.list_counts`;
    expect(rows).toBeGreaterThan(0);

    // Every kind of write, one row and many at a time, in one transaction and in several.
    await sql`insert into api.products (name, price, category) values ('Q', 1, 'cat9')`;
    await sql`update api.products set category = 'cat7' where id % 5 = 0`;
    await sql`update api.products set price = 2 where category = 'cat1'`;
    await sql`delete from api.products where id % 7 = 0`;
    await sql`update api.orders set status = 'refunded' where status = 'paid' and id % 2 = 0`;
    await sql`update api.orders set customer_id = 'cust9' where id % 9 = 0`;
    await sql.begin(async (tx) => {
      await tx`insert into api.orders (customer_id, amount, currency) values ('cust1', 5, 'USD')`;
      await tx`delete from api.orders where id % 11 = 0`;
    });
    // An insert inside a CTE, as order creation is being rewritten to do.
    await sql`
      with placed as (
        insert into api.orders (customer_id, amount, currency) values ('cust2', 5, 'USD')
        returning id)
      select id from placed`;
    expect(await listCountMismatches(sql)).toEqual([]);
    await sql`truncate api.order_items, api.order_events, api.refunds, api.orders`;
    expect(await listCountMismatches(sql)).toEqual([]);
  });

  test("N14 (v5), M4: replicas migrating a fresh database at once (no schema, no lock table yet) apply every migration exactly once, under a lock of the api's own schema", async () => {
    const pools = [1, 2, 3, 4].map(() => connectDatabase(fresh.url, { max: 2 }));
    try {
      await Promise.all(pools.map((sql) => migrateSchema(sql, { schema: "api", migrations })));
      const applied = await fresh.sql<{ hash: string }[]>`
        select hash from drizzle.api_migrations order by created_at`;
      expect(applied.map((row) => row.hash)).toEqual(migrations.map((m) => m.hash));
      const [lock] = await fresh.sql`
        select n.nspname as schema from pg_catalog.pg_class c
        join pg_catalog.pg_namespace n on n.oid = c.relnamespace
        where c.relname = ${migrationLockTable}`;
      expect(lock).toEqual({ schema: "api" });
    } finally {
      await Promise.all(pools.map((sql) => sql.end()));
    }
  });
});

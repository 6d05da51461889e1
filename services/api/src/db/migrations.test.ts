import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { migrateSchema } from "@commerce/shared/database";
import { privateDatabase } from "@commerce/testing/private-database";
import { migrations } from ".";

let database: Awaited<ReturnType<typeof privateDatabase>>;
beforeAll(async () => {
  database = await privateDatabase();
});
afterAll(() => database?.drop());

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
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { unique } from "@commerce/testing/basics";
import { type ApiHarness, problemType, startApi } from "@commerce/testing/in-process";
import { listCountMismatches } from "@commerce/testing/list-counts";
import { privateDatabase } from "@commerce/testing/private-database";

// A database of its own: the admin's list of all orders and the list of all products are
// compared with count(*) over whole tables.
let database: Awaited<ReturnType<typeof privateDatabase>>;
let api: ApiHarness;
let admin: string;
beforeAll(async () => {
  database = await privateDatabase();
  api = await startApi({ env: { DATABASE_URL: database.url } });
  admin = await api.admin();
});
afterAll(async () => {
  await api?.close();
  await database?.drop();
});

type Envelope = {
  items: { id?: number; order_id?: number }[];
  page: number;
  pages: number;
  per_page: number;
  total: number;
  next_after: number | null;
};

const get = async (path: string, token: string) => {
  const res = await api.call("GET", path, { token });
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.text}`);
  return res.json as Envelope;
};

const ok = async (res: Promise<{ status: number; text: string }>, ...statuses: number[]) => {
  const { status, text } = await res;
  if (!statuses.includes(status)) throw new Error(`unexpected ${status}: ${text}`);
};

const pick = <T>(list: T[]) => list[Math.floor(Math.random() * list.length)];

describe("list totals and keyset paging", () => {
  test("P4: total stays exact while writers race readers (inserts, category and status changes, deletes)", async () => {
    const { sql } = database;
    const categories = [unique("race-a"), unique("race-b")];
    for (let i = 0; i < 20; i++) await api.product({ category: categories[i % 2] });
    const stocked = await api.product({ category: unique("race-stock") });
    const customers = await Promise.all([api.customer(), api.customer(), api.customer()]);

    let running = true;
    const until = Date.now() + 3000;
    const loop = async (step: (i: number) => Promise<void>) => {
      for (let i = 0; running && Date.now() < until; i++) await step(i);
    };
    const productWriter = loop(async (i) => {
      if (i % 3 === 0) {
        await ok(
          api.call("POST", "/api/products", {
            token: admin,
            body: { name: "Racer", price: 100, category: pick(categories) },
          }),
          201,
        );
      } else if (i % 3 === 1) {
        const [row] = await sql`
          select id from api.products where category = any(${categories}) order by random() limit 1`;
        if (row)
          await ok(
            api.call("PATCH", `/api/products/${row.id}`, {
              token: admin,
              body: { category: pick(categories) },
            }),
            200,
            404,
          );
      } else {
        await sql`delete from api.products where id = (
          select id from api.products where category = any(${categories}) order by random() limit 1)`;
      }
    });
    const orderWriter = (customer: { sub: string; token: string }) =>
      loop(async (i) => {
        if (i % 4 !== 3) {
          await ok(
            api.call("POST", "/api/orders", {
              token: customer.token,
              body: { product_id: stocked.id, qty: 1 },
            }),
            201,
          );
          return;
        }
        const [row] = await sql`
          select id, status from api.orders where customer_id = ${customer.sub}
          order by random() limit 1`;
        if (!row) return;
        if (i % 8 === 3)
          await sql.begin(async (tx) => {
            await tx`delete from api.order_items where order_id = ${row.id}`;
            await tx`delete from api.order_events where order_id = ${row.id}`;
            await tx`delete from api.orders where id = ${row.id}`;
          });
        else
          await ok(
            api.call("PATCH", `/api/orders/${row.id}`, {
              token: admin,
              body: { status: pick(["paid", "cancelled"]), note: "by hand" },
            }),
            200,
            404,
            409,
          );
      });
    const mismatches: unknown[] = [];
    const inconsistent: unknown[] = [];
    const reader = loop(async (i) => {
      if (i % 2 === 0) mismatches.push(...(await listCountMismatches(sql)));
      const customer = pick(customers);
      const path = pick([
        "/api/products?per_page=100",
        `/api/products?per_page=100&category=${pick(categories)}`,
        "/api/orders?per_page=100",
        "/api/orders?per_page=100&status=paid",
      ]);
      const own = pick(["/api/orders?per_page=100", "/api/orders?per_page=100&status=created"]);
      for (const [p, token] of [
        [path, admin],
        [own, customer.token],
      ]) {
        const page = await get(p, token);
        // One snapshot: the first page holds exactly min(total, per_page) of the rows counted.
        if (
          page.items.length !== Math.min(page.total, 100) ||
          page.pages !== Math.ceil(page.total / 100)
        )
          inconsistent.push({ path: p, items: page.items.length, total: page.total });
      }
    });
    try {
      await Promise.all([productWriter, ...customers.map(orderWriter), reader]);
    } finally {
      running = false;
    }
    expect(mismatches).toEqual([]);
    expect(inconsistent).toEqual([]);

    // After the writers stop, every list's total is its count(*).
    expect(await listCountMismatches(sql)).toEqual([]);
    const [{ products, orders, paid }] = await sql`
      select (select count(*)::int from api.products) as products,
        (select count(*)::int from api.orders) as orders,
        (select count(*)::int from api.orders where status = 'paid') as paid`;
    expect((await get("/api/products", admin)).total).toBe(products);
    expect((await get("/api/orders", admin)).total).toBe(orders);
    expect((await get("/api/orders?status=paid", admin)).total).toBe(paid);
    for (const category of categories) {
      const [{ n }] = await sql`
        select count(*)::int as n from api.products where category = ${category}`;
      expect((await get(`/api/products?category=${category}`, admin)).total).toBe(n);
    }
    for (const customer of customers) {
      const [{ n }] = await sql`
        select count(*)::int as n from api.orders where customer_id = ${customer.sub}`;
      expect((await get("/api/orders", customer.token)).total).toBe(n);
    }
  }, 30_000);

  test("P4: an after walk sees every product of a category exactly once, in order, while more are added", async () => {
    const category = unique("walk");
    for (let i = 0; i < 23; i++) await api.product({ category });
    const seen: number[] = [];
    let after: number | null = 0;
    let pages = 0;
    while (after !== null) {
      const path: string =
        after === 0
          ? `/api/products?category=${category}&per_page=5`
          : `/api/products?category=${category}&per_page=5&after=${after}&page=9`;
      const page = await get(path, admin);
      seen.push(...page.items.map((item) => item.id as number));
      after = page.next_after;
      // Added while the walk goes on: after every cursor so far, so the walk must reach it.
      if (++pages <= 3) await api.product({ category });
      expect(pages).toBeLessThan(20);
    }
    const [{ ids }] = await database.sql`
      select array_agg(id order by id)::int[] as ids from api.products where category = ${category}`;
    expect(seen).toEqual(ids);
    expect(new Set(seen).size).toBe(26);
  });

  test("P4: an after walk of a customer's orders goes newest first, each once, next_after null at the end", async () => {
    const product = await api.product();
    const customer = await api.customer();
    const placed: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await api.call("POST", "/api/orders", {
        token: customer.token,
        body: { product_id: product.id, qty: 1 },
      });
      placed.push(res.json.order_id);
    }
    // Every status is listed when none is asked for (t.UnionEnum once defaulted it to created).
    await ok(
      api.call("PATCH", `/api/orders/${placed[2]}`, {
        token: customer.token,
        body: { status: "cancelled" },
      }),
      200,
    );
    const first = await get("/api/orders?per_page=3", customer.token);
    expect(first.items.map((o) => o.order_id)).toEqual(placed.slice(4).reverse());
    expect(first.next_after).toBe(placed[4]);
    const second = await get(`/api/orders?per_page=3&after=${first.next_after}`, customer.token);
    expect(second.items.map((o) => o.order_id)).toEqual(placed.slice(1, 4).reverse());
    expect(second).toMatchObject({ total: 7, pages: 3, per_page: 3, next_after: placed[1] });
    const third = await get(`/api/orders?per_page=3&after=${second.next_after}`, customer.token);
    expect(third.items.map((o) => o.order_id)).toEqual([placed[0]]);
    expect(third.next_after).toBeNull();
    // A full last page by number ends the list too.
    const byNumber = await get("/api/orders?per_page=7", customer.token);
    expect(byNumber.next_after).toBeNull();
  });

  test("P4: the last page, read from the far end, holds the same rows as counting from the front", async () => {
    const category = unique("ends");
    const made = [];
    for (let i = 0; i < 11; i++) made.push((await api.product({ category })).id);
    for (const [page, ids] of [
      [1, made.slice(0, 4)],
      [2, made.slice(4, 8)],
      [3, made.slice(8)],
      [4, []],
    ] as const) {
      const res = await get(`/api/products?category=${category}&per_page=4&page=${page}`, admin);
      expect(res.items.map((item) => item.id)).toEqual([...ids]);
      expect(res.next_after).toBe(page < 3 ? ids[3] : null);
    }
  });

  for (const after of ["0", "-1", "abc", "1.5", "016", "", "2147483648"])
    test(`P4: after=${after} on products is 400 problem+json`, async () => {
      const res = await api.call("GET", `/api/products?after=${after}`, { token: admin });
      expect(res.status).toBe(400);
      expect(res.headers.get("content-type")).toContain(problemType);
      expect(res.json.errors[0].path).toBe("/after");
    });

  test("P4: after=x on orders is 400 problem+json", async () => {
    const res = await api.call("GET", "/api/orders?after=x", { token: admin });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain(problemType);
  });
});

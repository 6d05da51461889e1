import { describe, expect, test } from "bun:test";
import { parseOrderEvent } from "@commerce/shared/contract/messages";
import { unique } from "@commerce/testing/basics";
import { apiForFile } from "@commerce/testing/in-process";
import { orderKit } from "@commerce/testing/orders";

const { api, admin } = await apiForFile();

const { stockOf, ordersOf, eventsOf, eventNames, order, placed } = orderKit(() => api);

describe("stock", () => {
  test("P3: an admin sets stock on create, changes it and clears it (null = not tracked)", async () => {
    const created = await api.call("POST", "/api/products", {
      token: admin,
      body: { name: "Lamp", price: 100, category: unique("c"), stock: 5 },
    });
    expect(created.status).toBe(201);
    expect(created.json.stock).toBe(5);
    const path = `/api/products/${created.json.id}`;
    expect((await api.call("PATCH", path, { token: admin, body: { stock: 0 } })).json.stock).toBe(
      0,
    );
    expect(
      (await api.call("PATCH", path, { token: admin, body: { stock: null } })).json.stock,
    ).toBe(null);
    expect((await api.call("GET", path, { token: admin })).json.stock).toBe(null);
    const untracked = await api.product();
    expect(untracked).toMatchObject({ stock: null });
  });

  test("P3: stock must be null or an integer from 0 to 1000000", async () => {
    const product = await api.product();
    for (const stock of [-1, 1_000_001, "5", 1.5]) {
      const res = await api.call("PATCH", `/api/products/${product.id}`, {
        token: admin,
        body: { stock },
      });
      expect(res.status).toBe(400);
      expect(res.json.errors[0].path).toBe("/stock");
    }
    expect(await stockOf(product.id)).toBe(null);
  });

  test("L2: an order takes its quantity from tracked stock; untracked stock stays null", async () => {
    const { product } = await placed(10, 3);
    expect(await stockOf(product.id)).toBe(7);
    const free = await placed(null, 3);
    expect(await stockOf(free.product.id)).toBe(null);
  });

  test("L2: a line the stock cannot cover is 409 naming /qty; nothing is taken or created", async () => {
    const product = await api.product();
    await api.call("PATCH", `/api/products/${product.id}`, { token: admin, body: { stock: 2 } });
    const { sub, token } = await api.customer();
    const res = await order(token, { product_id: product.id, qty: 3 });
    expect(res.status).toBe(409);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(res.json.errors).toEqual([{ path: "/qty", message: expect.stringContaining("stock") }]);
    expect(await stockOf(product.id)).toBe(2);
    expect(await ordersOf(sub)).toBe(0);
  });

  test("L2: in a multi-line order the short line is named (/items/1/qty) and no line's stock is taken", async () => {
    const plenty = await api.product();
    const scarce = await api.product();
    await api.call("PATCH", `/api/products/${plenty.id}`, { token: admin, body: { stock: 50 } });
    await api.call("PATCH", `/api/products/${scarce.id}`, { token: admin, body: { stock: 1 } });
    const { sub, token } = await api.customer();
    const res = await order(token, {
      items: [
        { product_id: plenty.id, qty: 5 },
        { product_id: scarce.id, qty: 2 },
      ],
    });
    expect(res.status).toBe(409);
    expect(res.json.errors.map((e: { path: string }) => e.path)).toEqual(["/items/1/qty"]);
    expect(await stockOf(plenty.id)).toBe(50);
    expect(await stockOf(scarce.id)).toBe(1);
    expect(await ordersOf(sub)).toBe(0);
  });

  test("L2: 1000 concurrent one-unit orders for a product with stock 10 make exactly 10 orders", async () => {
    const product = await api.product();
    await api.call("PATCH", `/api/products/${product.id}`, { token: admin, body: { stock: 10 } });
    const { sub, token } = await api.customer();
    const results = await Promise.all(
      Array.from({ length: 1000 }, () => order(token, { product_id: product.id, qty: 1 })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 409)).toHaveLength(990);
    expect(await stockOf(product.id)).toBe(0);
    expect(await ordersOf(sub)).toBe(10);
  }, 60_000);

  test("L2: a flash sale: 1000 concurrent buyers of 100 units of a hot tracked product make exactly 100 orders, 900 are refused with 409, stock 0; orders arriving together share a commit", async () => {
    const product = await api.product();
    await api.call("PATCH", `/api/products/${product.id}`, { token: admin, body: { stock: 101 } });
    const { sub, token } = await api.customer();
    // One order first: the api now knows the product's stock is tracked.
    expect((await order(token, { product_id: product.id, qty: 1 })).status).toBe(201);
    const results = await Promise.all(
      Array.from({ length: 1000 }, () => order(token, { product_id: product.id, qty: 1 })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(100);
    expect(statuses.filter((s) => s === 409)).toHaveLength(900);
    expect(await stockOf(product.id)).toBe(0);
    expect(await ordersOf(sub)).toBe(101);
    const [taken] = await api.sql<{ units: number; orders: number; commits: number }[]>`
      select sum(i.qty)::int as units, count(distinct o.id)::int as orders,
        count(distinct o.created_at)::int as commits
      from api.orders o join api.order_items i on i.order_id = o.id
      where o.customer_id = ${sub}`;
    expect(taken.units).toBe(101);
    expect(taken.orders).toBe(101);
    // created_at is the transaction's start: orders placed in one commit share it.
    expect(taken.commits).toBeLessThan(101);
  }, 60_000);

  test("L2: buyers of different quantities at once: no oversell, and no buyer refused while the stock left would cover them", async () => {
    const product = await api.product();
    await api.call("PATCH", `/api/products/${product.id}`, { token: admin, body: { stock: 61 } });
    const { token } = await api.customer();
    expect((await order(token, { product_id: product.id, qty: 1 })).status).toBe(201);
    const qtys = Array.from({ length: 300 }, (_, i) => [1, 2, 3, 5, 7][i % 5]);
    const results = await Promise.all(
      qtys.map((qty) => order(token, { product_id: product.id, qty })),
    );
    const placedUnits = qtys.filter((_, i) => results[i].status === 201).reduce((a, b) => a + b, 0);
    expect(results.every((r) => r.status === 201 || r.status === 409)).toBe(true);
    const left = await stockOf(product.id);
    expect(placedUnits + (left ?? 0)).toBe(60);
    for (const [i, r] of results.entries())
      if (r.status === 409) expect(left).toBeLessThan(qtys[i]);
  }, 60_000);

  test("L2: concurrent orders taking two tracked products in opposite line orders neither deadlock nor oversell", async () => {
    const [first, second, free] = [await api.product(), await api.product(), await api.product()];
    for (const product of [first, second])
      await api.call("PATCH", `/api/products/${product.id}`, { token: admin, body: { stock: 40 } });
    const { sub, token } = await api.customer();
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => {
        const pair = i % 2 ? [first, second] : [second, first];
        return order(token, {
          items: [...pair, free].map((product) => ({ product_id: product.id, qty: 1 })),
        });
      }),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(40);
    expect(statuses.filter((s) => s === 409)).toHaveLength(20);
    expect([await stockOf(first.id), await stockOf(second.id), await stockOf(free.id)]).toEqual([
      0,
      0,
      null,
    ]);
    expect(await ordersOf(sub)).toBe(40);
  }, 60_000);

  test("L2: every short line of an order is named; an untracked line is never short; nothing is taken", async () => {
    const [short, free, scarce, plenty] = [
      await api.product(),
      await api.product(),
      await api.product(),
      await api.product(),
    ];
    for (const [product, stock] of [
      [short, 3],
      [scarce, 1],
      [plenty, 100],
    ] as const)
      await api.call("PATCH", `/api/products/${product.id}`, { token: admin, body: { stock } });
    const { sub, token } = await api.customer();
    const res = await order(token, {
      items: [
        { product_id: short.id, qty: 5 },
        { product_id: free.id, qty: 1000 },
        { product_id: scarce.id, qty: 2 },
        { product_id: plenty.id, qty: 100 },
      ],
    });
    expect(res.status).toBe(409);
    expect(res.json.errors.map((e: { path: string }) => e.path)).toEqual([
      "/items/0/qty",
      "/items/2/qty",
    ]);
    expect(await Promise.all([short, free, scarce, plenty].map((p) => stockOf(p.id)))).toEqual([
      3,
      null,
      1,
      100,
    ]);
    expect(await ordersOf(sub)).toBe(0);
  });

  test("R1, L2: an unknown product is 404 even when another line is short, and nothing is taken", async () => {
    const product = await api.product();
    await api.call("PATCH", `/api/products/${product.id}`, { token: admin, body: { stock: 1 } });
    const { sub, token } = await api.customer();
    const res = await order(token, {
      items: [
        { product_id: product.id, qty: 1 },
        { product_id: 2147483002, qty: 1 },
      ],
    });
    expect(res.status).toBe(404);
    expect(res.json.detail).toContain("2147483002");
    expect(await stockOf(product.id)).toBe(1);
    expect(await ordersOf(sub)).toBe(0);
  });

  test("L2: the database itself refuses stock below zero", async () => {
    const product = await api.product();
    await api.call("PATCH", `/api/products/${product.id}`, { token: admin, body: { stock: 1 } });
    await expect(
      api.sql`update api.products set stock = stock - 2 where id = ${product.id}`,
    ).rejects.toMatchObject({ code: "23514" });
  });
});

describe("multi-line orders", () => {
  test("R1: items make one order with a line each at the products' prices; amount is their sum", async () => {
    const mug = await api.product({ name: "Mug", price: 1200 });
    const lamp = await api.product({ name: "Lamp", price: 4500 });
    const { token } = await api.customer();
    const res = await order(token, {
      items: [
        { product_id: lamp.id, qty: 1 },
        { product_id: mug.id, qty: 3 },
      ],
    });
    expect(res.status).toBe(201);
    expect(res.json.items).toEqual([
      { product_id: lamp.id, name: "Lamp", qty: 1, unit_price: 4500, amount: 4500 },
      { product_id: mug.id, name: "Mug", qty: 3, unit_price: 1200, amount: 3600 },
    ]);
    expect(res.json.amount).toBe(8100);
    expect(res.json).not.toHaveProperty("product_id");
    expect(res.json).not.toHaveProperty("qty");
    // The line keeps the price it was sold at.
    await api.call("PATCH", `/api/products/${mug.id}`, { token: admin, body: { price: 1 } });
    const read = await api.call("GET", `/api/orders/${res.json.order_id}`, { token });
    expect(read.json.items[1].unit_price).toBe(1200);
  });

  test("R5, M3, T1: placing an order writes one orders.created, carrying the order as answered, and one timeline entry", async () => {
    const tracked = await api.product({ price: 700 });
    await api.call("PATCH", `/api/products/${tracked.id}`, { token: admin, body: { stock: 9 } });
    const free = await api.product({ price: 250 });
    const { sub, token } = await api.customer();
    const res = await order(token, {
      items: [
        { product_id: free.id, qty: 2 },
        { product_id: tracked.id, qty: 4 },
      ],
    });
    expect(res.status).toBe(201);
    const placedOrder = res.json;
    const events = await eventsOf(placedOrder.order_id);
    expect(events.map((e) => e.message_id)).toEqual([`order-created-${placedOrder.order_id}`]);
    expect(events[0].subject).toBe(api.deps.topology.orders.event("created"));
    expect(parseOrderEvent(events[0].payload)).toEqual({
      order_id: placedOrder.order_id,
      status: "created",
      amount: 3300,
      currency: placedOrder.currency,
      at: placedOrder.created_at,
      source: "api",
      customer_id: sub,
      items: [
        { product_id: free.id, name: free.name, qty: 2, unit_price: 250 },
        { product_id: tracked.id, name: tracked.name, qty: 4, unit_price: 700 },
      ],
    });
    const timeline = await api.call("GET", `/api/orders/${placedOrder.order_id}/events`, { token });
    expect(timeline.json.items).toMatchObject([{ seq: 1, type: "created", source: "api" }]);
    const read = await api.call("GET", `/api/orders/${placedOrder.order_id}`, { token });
    expect(read.json).toEqual(placedOrder);
  });

  test("R1: 50 lines at the highest price and quantity keep exact 64-bit amounts", async () => {
    const products = await Promise.all(
      Array.from({ length: 50 }, () => api.product({ price: 100_000_000 })),
    );
    const { token } = await api.customer();
    const res = await order(token, {
      items: products.map((product) => ({ product_id: product.id, qty: 1000 })),
    });
    expect(res.status).toBe(201);
    expect(res.json.items).toHaveLength(50);
    expect(res.json.items.map((item: { product_id: number }) => item.product_id)).toEqual(
      products.map((product) => product.id),
    );
    expect(res.json.items[49]).toMatchObject({ unit_price: 100_000_000, amount: 100_000_000_000 });
    expect(res.json.amount).toBe(5_000_000_000_000);
    const read = await api.call("GET", `/api/orders/${res.json.order_id}`, { token });
    expect(read.json).toEqual(res.json);
  });

  test("D6, R1: lines naming one product are accepted and merged into one line", async () => {
    const product = await api.product({ price: 300 });
    const other = await api.product({ price: 100 });
    const { token } = await api.customer();
    const res = await order(token, {
      items: [
        { product_id: product.id, qty: 1 },
        { product_id: other.id, qty: 1 },
        { product_id: product.id, qty: 2 },
      ],
    });
    expect(res.status).toBe(201);
    expect(res.json.amount).toBe(1000);
    expect(
      res.json.items.map((i: { product_id: number; qty: number }) => [i.product_id, i.qty]),
    ).toEqual([
      [product.id, 3],
      [other.id, 1],
    ]);
  });

  test("R1: no lines, 51 lines or both body shapes are 400; nothing is created", async () => {
    const product = await api.product();
    const { sub, token } = await api.customer();
    const line = { product_id: product.id, qty: 1 };
    for (const body of [
      { items: [] },
      { items: Array.from({ length: 51 }, (_, i) => ({ product_id: i + 1, qty: 1 })) },
      { items: [line], product_id: product.id, qty: 1 },
      { items: [{ product_id: product.id }] },
    ]) {
      const res = await order(token, body);
      expect(res.status).toBe(400);
      expect(res.json.errors.length).toBeGreaterThan(0);
    }
    expect(await ordersOf(sub)).toBe(0);
  });

  test("R1: an unknown product among the lines is 404 naming it", async () => {
    const product = await api.product();
    const { token } = await api.customer();
    const res = await order(token, {
      items: [
        { product_id: product.id, qty: 1 },
        { product_id: 2147483001, qty: 1 },
      ],
    });
    expect(res.status).toBe(404);
    expect(res.json.detail).toContain("2147483001");
  });
});

describe("checkout", () => {
  const put = (token: string, productId: number, qty: number) =>
    api.call("PUT", `/api/cart/items/${productId}`, { token, body: { qty } });

  test("C4: the cart becomes an order at current prices and is emptied in the same step", async () => {
    const mug = await api.product({ price: 1000 });
    const lamp = await api.product({ price: 3000 });
    const { token } = await api.customer();
    await put(token, mug.id, 2);
    await put(token, lamp.id, 1);
    await api.call("PATCH", `/api/products/${mug.id}`, { token: admin, body: { price: 1100 } });
    const res = await api.call("POST", "/api/cart/checkout", { token });
    expect(res.status).toBe(201);
    expect(res.headers.get("location")).toBe(`/api/orders/${res.json.order_id}`);
    expect(res.json.items.map((i: { product_id: number; amount: number }) => i.amount)).toEqual([
      2200, 3000,
    ]);
    expect(res.json.amount).toBe(5200);
    expect((await api.call("GET", "/api/cart", { token })).json).toEqual({ items: [], total: 0 });
    expect(await eventNames(res.json.order_id)).toEqual(["created"]);
  });

  test("C4: an empty cart is 409; a body other than {} is 400", async () => {
    const { token } = await api.customer();
    const empty = await api.call("POST", "/api/cart/checkout", { token, body: {} });
    expect(empty.status).toBe(409);
    expect(empty.json.detail).toContain("empty");
    const odd = await api.call("POST", "/api/cart/checkout", { token, body: { items: [] } });
    expect(odd.status).toBe(400);
  });

  test("C4: stock too low is 409 and the cart is kept as it was", async () => {
    const product = await api.product();
    await api.call("PATCH", `/api/products/${product.id}`, { token: admin, body: { stock: 1 } });
    const { sub, token } = await api.customer();
    await put(token, product.id, 2);
    const res = await api.call("POST", "/api/cart/checkout", { token });
    expect(res.status).toBe(409);
    expect(res.json.errors[0].path).toBe("/items/0/qty");
    expect((await api.call("GET", "/api/cart", { token })).json.items).toHaveLength(1);
    expect(await stockOf(product.id)).toBe(1);
    expect(await ordersOf(sub)).toBe(0);
  });

  test("C4, R2: with an Idempotency-Key a retried checkout replays the order; concurrent checkouts make one order", async () => {
    const product = await api.product();
    const { sub, token } = await api.customer();
    await put(token, product.id, 1);
    const headers = { "idempotency-key": unique("k") };
    const first = await api.call("POST", "/api/cart/checkout", { token, headers });
    const again = await api.call("POST", "/api/cart/checkout", { token, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.json).toEqual(first.json);

    await put(token, product.id, 3);
    const racing = await Promise.all(
      Array.from({ length: 5 }, () => api.call("POST", "/api/cart/checkout", { token })),
    );
    expect(racing.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
    expect(await ordersOf(sub)).toBe(2);
  });
});

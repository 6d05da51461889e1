import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { orderEventNames, type PaymentMessage, parseOrderEvent } from "@commerce/shared/messages";
import { paymentMessageFor, unique } from "@commerce/testing/basics";
import { type ApiHarness, startApi } from "@commerce/testing/in-process";
import { expireDueOrders } from "./expiry";
import { applyPaymentMessage, type PaymentKind, paymentOutcome } from "./payment-inbox";

let api: ApiHarness;
let admin: string;
beforeAll(async () => {
  api = await startApi();
  admin = await api.admin();
});
afterAll(() => api.close());

type Placed = { order_id: number; amount: number; currency: string; status: string };

const stockOf = async (productId: number) =>
  (await api.sql`select stock from api.products where id = ${productId}`)[0].stock as number | null;

const ordersOf = async (sub: string) =>
  (await api.sql`select count(*)::int as n from api.orders where customer_id = ${sub}`)[0]
    .n as number;

/** The order events this harness's api wrote for one order, oldest first. */
const eventsOf = async (orderId: number) => {
  const subjects = orderEventNames.map((event) => api.deps.topology.orders.event(event));
  return api.sql<{ subject: string; message_id: string; payload: Record<string, unknown> }[]>`
    select subject, message_id, payload from api.outbox
    where subject = any(${subjects}) and payload->>'order_id' = ${String(orderId)} order by id`;
};
const eventNames = async (orderId: number) =>
  (await eventsOf(orderId)).map((e) => e.subject.split(".").pop());

async function order(
  token: string,
  body: unknown,
): Promise<{ status: number; json: any; headers: Headers }> {
  return api.call("POST", "/api/orders", { token, body });
}

async function placed(stock: number | null = null, qty = 1, price = 500) {
  const product = await api.product({ price });
  if (stock !== null)
    await api.call("PATCH", `/api/products/${product.id}`, { token: admin, body: { stock } });
  const customer = await api.customer();
  const res = await order(customer.token, { product_id: product.id, qty });
  expect(res.status).toBe(201);
  return { product, customer, order: res.json as Placed };
}

const patch = (token: string, orderId: number, status: string) =>
  api.call("PATCH", `/api/orders/${orderId}`, { token, body: { status } });

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
    const { token } = await api.customer();
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

  test("R1: the same product twice, no lines, 51 lines or both body shapes are 400; nothing is created", async () => {
    const product = await api.product();
    const { sub, token } = await api.customer();
    const line = { product_id: product.id, qty: 1 };
    for (const body of [
      { items: [line, line] },
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

describe("moves", () => {
  test("L1, R4, L2: the owner cancels a created order: cancel_reason customer, stock back, one orders.cancelled", async () => {
    const { product, customer, order: placedOrder } = await placed(5, 2);
    expect(await stockOf(product.id)).toBe(3);
    const res = await patch(customer.token, placedOrder.order_id, "cancelled");
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      status: "cancelled",
      cancel_reason: "customer",
      expires_at: null,
    });
    expect(res.json.cancelled_at).toMatch(/^\d{4}-/);
    expect(await stockOf(product.id)).toBe(5);
    const again = await patch(customer.token, placedOrder.order_id, "cancelled");
    expect(again.status).toBe(200);
    expect(again.json).toEqual(res.json);
    expect(await stockOf(product.id)).toBe(5);
    const events = await eventsOf(placedOrder.order_id);
    expect(events.map((e) => e.message_id)).toEqual([
      `order-created-${placedOrder.order_id}`,
      `order-cancelled-${placedOrder.order_id}`,
    ]);
    expect(events[1].payload).toMatchObject({
      status: "cancelled",
      source: "api",
      reason: "customer",
    });
  });

  test("R4, A4: a customer may only cancel, and only their own order", async () => {
    const { customer, order: placedOrder } = await placed();
    const stranger = await api.customer();
    expect((await patch(stranger.token, placedOrder.order_id, "cancelled")).status).toBe(404);
    for (const status of ["paid", "refunded", "created"])
      expect((await patch(customer.token, placedOrder.order_id, status)).status).toBe(403);
    expect(await eventNames(placedOrder.order_id)).toEqual(["created"]);
  });

  test("L1, R4: moves the table does not allow are 409 naming both states", async () => {
    const { order: first } = await placed();
    const refund = await patch(admin, first.order_id, "refunded");
    expect(refund.status).toBe(409);
    expect(refund.json.detail).toContain("created");
    expect(refund.json.detail).toContain("refunded");

    expect((await patch(admin, first.order_id, "cancelled")).json.cancel_reason).toBe("admin");
    const payCancelled = await patch(admin, first.order_id, "paid");
    expect(payCancelled.status).toBe(409);
    expect(payCancelled.json.detail).toMatch(/cancelled.*paid/);
    const back = await patch(admin, first.order_id, "created");
    expect(back.status).toBe(409);

    const { order: second } = await placed();
    expect((await patch(admin, second.order_id, "paid")).status).toBe(200);
    expect((await patch(admin, second.order_id, "cancelled")).status).toBe(409);
    const refunded = await patch(admin, second.order_id, "refunded");
    expect(refunded.status).toBe(200);
    expect(refunded.json.refunded_at).toMatch(/^\d{4}-/);
    expect((await patch(admin, second.order_id, "paid")).status).toBe(409);
    expect(await eventNames(second.order_id)).toEqual(["created", "paid", "refunded"]);
  });

  test("L2: payment and refund leave stock alone; ten concurrent cancels give the stock back once", async () => {
    const { product, customer, order: placedOrder } = await placed(4, 3);
    const results = await Promise.all(
      Array.from({ length: 10 }, () => patch(customer.token, placedOrder.order_id, "cancelled")),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(await stockOf(product.id)).toBe(4);
    expect(await eventNames(placedOrder.order_id)).toEqual(["created", "cancelled"]);

    const paid = await placed(4, 3);
    await patch(admin, paid.order.order_id, "paid");
    await patch(admin, paid.order.order_id, "refunded");
    expect(await stockOf(paid.product.id)).toBe(1);
  });

  test("R3: the order list filters by status", async () => {
    const { customer, order: kept } = await placed();
    const other = await order(customer.token, { product_id: (await api.product()).id, qty: 1 });
    await patch(customer.token, other.json.order_id, "cancelled");
    const list = await api.call("GET", "/api/orders?status=cancelled", { token: customer.token });
    expect(list.json.items.map((o: Placed) => o.order_id)).toEqual([other.json.order_id]);
    expect(list.json.total).toBe(1);
    const created = await api.call("GET", "/api/orders?status=created", { token: customer.token });
    expect(created.json.items.map((o: Placed) => o.order_id)).toEqual([kept.order_id]);
    expect(
      (await api.call("GET", "/api/orders?status=lost", { token: customer.token })).status,
    ).toBe(400);
  });
});

describe("expiry", () => {
  test("L3: an unpaid order past expires_at is cancelled as expired once, its stock given back; paid ones stay", async () => {
    const shortLived = await startApi({ env: { ORDER_TTL_SECONDS: "1" } });
    try {
      const adminToken = await shortLived.admin();
      const product = await shortLived.product();
      await shortLived.call("PATCH", `/api/products/${product.id}`, {
        token: adminToken,
        body: { stock: 5 },
      });
      const { token } = await shortLived.customer();
      const unpaid = await shortLived.call("POST", "/api/orders", {
        token,
        body: { product_id: product.id, qty: 2 },
      });
      const paid = await shortLived.call("POST", "/api/orders", {
        token,
        body: { product_id: product.id, qty: 1 },
      });
      await shortLived.call("PATCH", `/api/orders/${paid.json.order_id}`, {
        token: adminToken,
        body: { status: "paid" },
      });
      expect(Date.parse(unpaid.json.expires_at) - Date.parse(unpaid.json.created_at)).toBe(1000);
      await Bun.sleep(1100);

      const { topology } = shortLived.deps;
      // Sweep until nothing is due: the shared database may hold other tests' overdue orders.
      let swept = 0;
      for (let n = await expireDueOrders(shortLived.db, topology); n > 0; )
        [swept, n] = [swept + n, await expireDueOrders(shortLived.db, topology)];
      expect(swept).toBeGreaterThanOrEqual(1);
      const read = await shortLived.call("GET", `/api/orders/${unpaid.json.order_id}`, { token });
      expect(read.json).toMatchObject({
        status: "cancelled",
        cancel_reason: "expired",
        expires_at: null,
      });
      expect(
        (await shortLived.sql`select stock from api.products where id = ${product.id}`)[0].stock,
      ).toBe(4);
      const paidNow = await shortLived.call("GET", `/api/orders/${paid.json.order_id}`, { token });
      expect(paidNow.json.status).toBe("paid");

      // Two sweepers at once (two replicas) find nothing more to do.
      await Promise.all([
        expireDueOrders(shortLived.db, topology),
        expireDueOrders(shortLived.db, topology),
      ]);
      const cancelled = await shortLived.sql`
        select payload from api.outbox where subject = ${topology.orders.event("cancelled")}
        and payload->>'order_id' = ${String(unpaid.json.order_id)}`;
      expect(cancelled).toHaveLength(1);
      expect(cancelled[0].payload).toMatchObject({ source: "expiry", reason: "expired" });
    } finally {
      await shortLived.close();
    }
  });

  test("L3: with ORDER_TTL_SECONDS=0 orders never expire (expires_at null)", async () => {
    const forever = await startApi({ env: { ORDER_TTL_SECONDS: "0" } });
    try {
      const product = await forever.product();
      const { token } = await forever.customer();
      const res = await forever.call("POST", "/api/orders", {
        token,
        body: { product_id: product.id, qty: 1 },
      });
      expect(res.json.expires_at).toBeNull();
    } finally {
      await forever.close();
    }
  });
});

describe("payment events", () => {
  const apply = (kind: PaymentKind, m: PaymentMessage) =>
    applyPaymentMessage(api.db, api.deps.topology, kind, m);
  const reviewsOf = async (orderId: number) =>
    (
      await api.sql`select reason from api.payment_reviews where order_id = ${orderId} order by id`
    ).map((r) => r.reason);

  test("L4: the table, as a function of the event and the order", () => {
    const order = (status: "created" | "paid" | "cancelled" | "refunded") => ({
      status,
      amount: 1000,
      currency: "USD",
    });
    const same = { amount: 1000, currency: "USD" };
    expect(paymentOutcome("succeeded", order("created"), same)).toBe("paid");
    expect(paymentOutcome("succeeded", order("paid"), same)).toBe("duplicate_payment");
    expect(paymentOutcome("succeeded", order("cancelled"), same)).toBe("order_not_payable");
    expect(paymentOutcome("succeeded", order("refunded"), same)).toBe("order_not_payable");
    expect(paymentOutcome("succeeded", order("created"), { ...same, amount: 999 })).toBe(
      "mismatch",
    );
    expect(paymentOutcome("succeeded", order("created"), { ...same, currency: "EUR" })).toBe(
      "mismatch",
    );
    expect(paymentOutcome("refunded", order("paid"), same)).toBe("refunded");
    expect(paymentOutcome("refunded", order("paid"), { ...same, amount: 400 })).toBe(
      "partial_refund",
    );
    expect(paymentOutcome("refunded", order("paid"), { ...same, amount: 1001 })).toBe("mismatch");
    expect(paymentOutcome("refunded", order("created"), same)).toBe("refund_not_applicable");
    expect(paymentOutcome("failed", order("paid"), same)).toBe("payment_failed");
    for (const kind of ["succeeded", "refunded", "failed"] as const)
      expect(paymentOutcome(kind, undefined, same)).toBe("unknown_order");
  });

  test("L4, M2, M3: succeeded pays, refunded refunds, each once, with one event carrying the notification id", async () => {
    const { order: o } = await placed();
    const paid = paymentMessageFor(o);
    expect(await apply("succeeded", paid)).toBe("paid");
    expect(await apply("succeeded", paid)).toBe("duplicate");
    const refund = paymentMessageFor(o);
    expect(await apply("refunded", refund)).toBe("refunded");
    const events = await eventsOf(o.order_id);
    expect(events.map((e) => e.subject.split(".").pop())).toEqual(["created", "paid", "refunded"]);
    expect(events[1].payload).toMatchObject({
      status: "paid",
      source: "webhook",
      notification_id: paid.notification_id,
    });
    expect(events[2].payload).toMatchObject({ notification_id: refund.notification_id });
    for (const event of events) expect(parseOrderEvent(event.payload)).toBeDefined();
  });

  test("L4: a payment for a cancelled order, a second payment, refunds that do not fit and unknown orders are reviews", async () => {
    const { customer, order: cancelled } = await placed();
    await patch(customer.token, cancelled.order_id, "cancelled");
    expect(await apply("succeeded", paymentMessageFor(cancelled))).toBe("order_not_payable");
    expect(await apply("refunded", paymentMessageFor(cancelled))).toBe("refund_not_applicable");

    const { order: o } = await placed(null, 2, 500);
    await apply("succeeded", paymentMessageFor(o));
    expect(await apply("succeeded", paymentMessageFor(o))).toBe("duplicate_payment");
    expect(await apply("refunded", paymentMessageFor(o, { amount: 400 }))).toBe("partial_refund");
    expect(await apply("refunded", paymentMessageFor(o, { currency: "EUR" }))).toBe("mismatch");
    expect(await reviewsOf(o.order_id)).toEqual([
      "duplicate_payment",
      "partial_refund",
      "mismatch",
    ]);
    expect(await eventNames(o.order_id)).toEqual(["created", "paid"]);

    const ghost = { ...o, order_id: 9_000_000_000_000 + Math.floor(Math.random() * 1e12) };
    expect(await apply("failed", paymentMessageFor(ghost))).toBe("unknown_order");
    expect(await reviewsOf(ghost.order_id)).toEqual(["unknown_order"]);
  });

  test("L4, M3: payment.failed changes nothing but writes one orders.payment_failed per notification", async () => {
    const { order: o } = await placed();
    const failed = paymentMessageFor(o);
    expect(await apply("failed", failed)).toBe("payment_failed");
    expect(await apply("failed", failed)).toBe("duplicate");
    expect(await apply("failed", paymentMessageFor(o))).toBe("payment_failed");
    const events = await eventsOf(o.order_id);
    expect(events.map((e) => e.message_id)).toEqual([
      `order-created-${o.order_id}`,
      `order-payment_failed-${failed.notification_id}`,
      expect.stringMatching(/^order-payment_failed-evt/),
    ]);
    expect(events[1].payload).toMatchObject({ status: "created", source: "webhook" });
    const read = await api.call("GET", `/api/orders/${o.order_id}`, { token: admin });
    expect(read.json.status).toBe("created");
  });

  test("L1: cancel, payment and expiry racing on one order: exactly one move and one event", async () => {
    for (let round = 0; round < 5; round++) {
      const { customer, order: o } = await placed(3, 1);
      await api.sql`update api.orders set expires_at = now() - interval '1 second' where id = ${o.order_id}`;
      const results = await Promise.allSettled([
        patch(customer.token, o.order_id, "cancelled"),
        apply("succeeded", paymentMessageFor(o)),
        expireDueOrders(api.db, api.deps.topology, 1),
      ]);
      expect(results.every((r) => r.status === "fulfilled")).toBe(true);
      const moves = (await eventNames(o.order_id)).filter((e) => e !== "created");
      expect(moves).toHaveLength(1);
      const [row] = await api.sql`select status from api.orders where id = ${o.order_id}`;
      expect(row.status).toBe(moves[0]);
    }
  });
});

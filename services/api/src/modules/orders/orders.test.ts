import { describe, expect, test } from "bun:test";
import { unique } from "@commerce/testing/basics";
import { apiForFile, problemType } from "@commerce/testing/in-process";
import { deleteExpiredIdempotencyKeys } from "../../lib/idempotency";

const { api, admin } = await apiForFile();
const adminSub = JSON.parse(Buffer.from(admin.split(".")[1], "base64url").toString()).sub;

const countOrders = async (customerId: string) => {
  const [{ n }] =
    await api.sql`select count(*)::int as n from api.orders where customer_id = ${customerId}`;
  return n as number;
};

const outboxFor = (orderId: number) =>
  api.sql`select subject, message_id, payload from api.outbox where message_id = ${`order-paid-${orderId}`}
          and subject = ${api.deps.topology.orders.event("paid")}`;

describe("orders", () => {
  test("R1: the seed's one-line body creates an order: 201, Location, one line, the seed's fields, status created", async () => {
    const product = await api.product({ price: 1250 });
    const { token } = await api.customer();
    const res = await api.call("POST", "/api/orders", {
      token,
      body: { product_id: product.id, qty: 3 },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("location")).toBe(`/api/orders/${res.json.order_id}`);
    expect(res.json).toEqual({
      order_id: expect.any(Number),
      status: "created",
      items: [{ product_id: product.id, name: "Mug", qty: 3, unit_price: 1250, amount: 3750 }],
      product_id: product.id,
      qty: 3,
      amount: 3750,
      currency: "USD",
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      expires_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      paid_at: null,
      cancelled_at: null,
      refunded_at: null,
      refunded_amount: 0,
      cancel_reason: null,
    });
    // ORDER_TTL_SECONDS defaults to 1800.
    expect(Date.parse(res.json.expires_at) - Date.parse(res.json.created_at)).toBe(1_800_000);
  });

  test("R1: an unknown product is 404 and creates nothing", async () => {
    const { sub, token } = await api.customer();
    const res = await api.call("POST", "/api/orders", {
      token,
      body: { product_id: 2147483000, qty: 1 },
    });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe(problemType);
    expect(await countOrders(sub)).toBe(0);
  });

  test.each([
    [{ product_id: 1 }, "/qty"],
    [{ qty: 1 }, "/product_id"],
    [{ product_id: 0, qty: 1 }, "/product_id"],
    [{ product_id: "1", qty: 1 }, "/product_id"],
    [{ product_id: 1, qty: 0 }, "/qty"],
    [{ product_id: 1, qty: 1001 }, "/qty"],
    [{ product_id: 1, qty: 2.5 }, "/qty"],
    [{ product_id: 1, qty: 1, status: "paid" }, "/status"],
  ])("R1: %j is 400 naming %s and creates nothing", async (body, path) => {
    const { sub, token } = await api.customer();
    const res = await api.call("POST", "/api/orders", { token, body });
    expect(res.status).toBe(400);
    expect(res.json.errors.map((e: { path: string }) => e.path)).toContain(path);
    expect(await countOrders(sub)).toBe(0);
  });

  test("R1: a body that is not an object, or not JSON, is 400", async () => {
    const { sub, token } = await api.customer();
    for (const body of ["[]", "42", "null", '{"product_id":1,', ""]) {
      const res = await api.call("POST", "/api/orders", {
        token,
        body,
        headers: { "content-type": "application/json" },
      });
      expect(res.status).toBe(400);
    }
    expect(await countOrders(sub)).toBe(0);
  });

  test("R2: the same Idempotency-Key and body replays the first response and creates nothing", async () => {
    const product = await api.product();
    const { sub, token } = await api.customer();
    const headers = { "idempotency-key": unique("key") };
    const body = { product_id: product.id, qty: 2 };
    const first = await api.call("POST", "/api/orders", { token, body, headers });
    const again = await api.call("POST", "/api/orders", { token, body, headers });
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(again.status).toBe(201);
    expect(again.json).toEqual(first.json);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("location")).toBe(first.headers.get("location"));
    expect(await countOrders(sub)).toBe(1);
  });

  test("R2: the same key with a different body is 422; another customer's same key is independent", async () => {
    const product = await api.product();
    const alice = await api.customer();
    const bob = await api.customer();
    const headers = { "idempotency-key": unique("key") };
    await api.call("POST", "/api/orders", {
      token: alice.token,
      body: { product_id: product.id, qty: 1 },
      headers,
    });
    const changed = await api.call("POST", "/api/orders", {
      token: alice.token,
      body: { product_id: product.id, qty: 2 },
      headers,
    });
    expect(changed.status).toBe(422);
    expect(changed.headers.get("content-type")).toBe(problemType);
    const bobs = await api.call("POST", "/api/orders", {
      token: bob.token,
      body: { product_id: product.id, qty: 2 },
      headers,
    });
    expect(bobs.status).toBe(201);
    expect(bobs.headers.get("idempotent-replayed")).toBeNull();
    expect(await countOrders(alice.sub)).toBe(1);
    expect(await countOrders(bob.sub)).toBe(1);
  });

  test("R2: while the first request with a key is still running, the same key is 409", async () => {
    const product = await api.product();
    const { sub, token } = await api.customer();
    const key = unique("key");
    // A claimed key without a recorded response is what a request still in flight leaves.
    const hash = new Bun.CryptoHasher("sha256")
      .update(JSON.stringify(["POST /api/orders", { product_id: product.id, qty: 1 }]))
      .digest("hex");
    await api.sql`insert into api.idempotency_keys (customer_id, key, request_hash) values (${sub}, ${key}, ${hash})`;
    const res = await api.call("POST", "/api/orders", {
      token,
      body: { product_id: product.id, qty: 1 },
      headers: { "idempotency-key": key },
    });
    expect(res.status).toBe(409);
    expect(await countOrders(sub)).toBe(0);
  });

  test("R2: 20 concurrent requests with one key create one order; the others replay or get 409", async () => {
    const product = await api.product();
    const { sub, token } = await api.customer();
    const headers = { "idempotency-key": unique("key") };
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        api.call("POST", "/api/orders", {
          token,
          body: { product_id: product.id, qty: 1 },
          headers,
        }),
      ),
    );
    expect(results.every((r) => r.status === 201 || r.status === 409)).toBe(true);
    const ids = new Set(results.filter((r) => r.status === 201).map((r) => r.json.order_id));
    expect(ids.size).toBe(1);
    expect(await countOrders(sub)).toBe(1);
  });

  test("R2: an Idempotency-Key over 255 characters is 400", async () => {
    const product = await api.product();
    const { sub, token } = await api.customer();
    const res = await api.call("POST", "/api/orders", {
      token,
      body: { product_id: product.id, qty: 1 },
      headers: { "idempotency-key": "k".repeat(256) },
    });
    expect(res.status).toBe(400);
    expect(await countOrders(sub)).toBe(0);
  });

  test("R3, A4: a customer reads own orders; another customer's order is 404; admin reads any", async () => {
    const product = await api.product();
    const alice = await api.customer();
    const bob = await api.customer();
    const created = await api.call("POST", "/api/orders", {
      token: alice.token,
      body: { product_id: product.id, qty: 1 },
    });
    const path = `/api/orders/${created.json.order_id}`;
    const own = await api.call("GET", path, { token: alice.token });
    expect(own.status).toBe(200);
    expect(own.json).toEqual(created.json);
    const other = await api.call("GET", path, { token: bob.token });
    expect(other.status).toBe(404);
    expect(other.json).toMatchObject({ status: 404, title: "Not Found" });
    expect((await api.call("GET", path, { token: admin })).json).toEqual(created.json);
    expect((await api.call("GET", "/api/orders/9007199254740991", { token: admin })).status).toBe(
      404,
    );
    expect((await api.call("GET", "/api/orders/abc", { token: admin })).status).toBe(400);
  });

  test("R3: lists own orders newest first, paginated; admin sees others' too", async () => {
    const product = await api.product();
    const alice = await api.customer();
    const bob = await api.customer();
    const ids = [];
    for (let i = 1; i <= 3; i++) {
      const res = await api.call("POST", "/api/orders", {
        token: alice.token,
        body: { product_id: product.id, qty: i },
      });
      ids.push(res.json.order_id);
    }
    const bobs = await api.call("POST", "/api/orders", {
      token: bob.token,
      body: { product_id: product.id, qty: 1 },
    });
    const page1 = await api.call("GET", "/api/orders?per_page=2", { token: alice.token });
    expect(page1.status).toBe(200);
    expect(page1.json).toMatchObject({ page: 1, pages: 2, per_page: 2, total: 3 });
    expect(page1.json.items.map((o: { order_id: number }) => o.order_id)).toEqual([ids[2], ids[1]]);
    const page2 = await api.call("GET", "/api/orders?per_page=2&page=2", { token: alice.token });
    expect(page2.json.items.map((o: { order_id: number }) => o.order_id)).toEqual([ids[0]]);
    const all = await api.call("GET", "/api/orders?per_page=100", { token: admin });
    expect(all.json.total).toBeGreaterThanOrEqual(4);
    expect(all.json.items[0].order_id).toBeGreaterThanOrEqual(bobs.json.order_id);
    expect((await api.call("GET", "/api/orders?page=0", { token: alice.token })).status).toBe(400);
  });

  test("R4, R5: admin marks an order paid once: 200 with paid_at, one orders.paid in the outbox", async () => {
    const product = await api.product({ price: 500 });
    const { sub, token } = await api.customer();
    const created = await api.call("POST", "/api/orders", {
      token,
      body: { product_id: product.id, qty: 2 },
    });
    const path = `/api/orders/${created.json.order_id}`;
    const paid = await api.call("PATCH", path, {
      token: admin,
      body: { status: "paid", note: "paid by bank transfer" },
    });
    expect(paid.status).toBe(200);
    expect(paid.json).toMatchObject({
      order_id: created.json.order_id,
      status: "paid",
      amount: 1000,
    });
    expect(paid.json.paid_at).toMatch(/^\d{4}-/);
    const again = await api.call("PATCH", path, {
      token: admin,
      body: { status: "paid", note: "paid by bank transfer" },
    });
    expect(again.status).toBe(200);
    expect(again.json).toEqual(paid.json);
    const rows = await outboxFor(created.json.order_id);
    expect(rows).toHaveLength(1);
    expect(rows[0].payload).toEqual({
      order_id: created.json.order_id,
      status: "paid",
      amount: 1000,
      currency: "USD",
      at: paid.json.paid_at,
      paid_at: paid.json.paid_at,
      source: "manual",
      customer_id: sub,
      items: [{ product_id: product.id, name: product.name, qty: 2, unit_price: 500 }],
      actor: adminSub,
    });
  });

  test("R5: 10 concurrent PATCHes move the order once and write one orders.paid", async () => {
    const product = await api.product();
    const { token } = await api.customer();
    const created = await api.call("POST", "/api/orders", {
      token,
      body: { product_id: product.id, qty: 1 },
    });
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        api.call("PATCH", `/api/orders/${created.json.order_id}`, {
          token: admin,
          body: { status: "paid", note: "paid by bank transfer" },
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(new Set(results.map((r) => r.json.paid_at)).size).toBe(1);
    expect(await outboxFor(created.json.order_id)).toHaveLength(1);
  });

  test("R4: a customer may not mark paid (403); unknown statuses or other fields are 400; unknown order 404", async () => {
    const product = await api.product();
    const { token } = await api.customer();
    const created = await api.call("POST", "/api/orders", {
      token,
      body: { product_id: product.id, qty: 1 },
    });
    const path = `/api/orders/${created.json.order_id}`;
    expect((await api.call("PATCH", path, { token, body: { status: "paid" } })).status).toBe(403);
    for (const body of [{ status: "shipped" }, { status: "paid", qty: 2 }, {}, { status: 1 }]) {
      const res = await api.call("PATCH", path, { token: admin, body });
      expect(res.status).toBe(400);
      expect(res.headers.get("content-type")).toBe(problemType);
    }
    expect(
      (
        await api.call("PATCH", "/api/orders/9007199254740991", {
          token: admin,
          body: { status: "paid", note: "paid by bank transfer" },
        })
      ).status,
    ).toBe(404);
    const unchanged = await api.call("GET", path, { token });
    expect(unchanged.json.status).toBe("created");
    expect(await outboxFor(created.json.order_id)).toHaveLength(0);
  });
});

describe("idempotency keys over time", () => {
  test("R2: after 24 hours a key is forgotten: the same key creates a new order and the sweep deletes old keys", async () => {
    const product = await api.product();
    const { sub, token } = await api.customer();
    const headers = { "idempotency-key": unique("key") };
    const body = { product_id: product.id, qty: 1 };
    const first = await api.call("POST", "/api/orders", { token, body, headers });
    await api.sql`update api.idempotency_keys set created_at = now() - interval '25 hours' where customer_id = ${sub}`;
    const later = await api.call("POST", "/api/orders", { token, body, headers });
    expect(later.status).toBe(201);
    expect(later.headers.get("idempotent-replayed")).toBeNull();
    expect(later.json.order_id).not.toBe(first.json.order_id);
    await api.sql`update api.idempotency_keys set created_at = now() - interval '25 hours' where customer_id = ${sub}`;
    await deleteExpiredIdempotencyKeys(api.db);
    const [{ n }] =
      await api.sql`select count(*)::int as n from api.idempotency_keys where customer_id = ${sub}`;
    expect(n).toBe(0);
  });
});

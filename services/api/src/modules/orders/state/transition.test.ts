import { describe, expect, test } from "bun:test";
import { parseOrderEvent } from "@commerce/shared/contract/messages";
import { parseTraceparent } from "@commerce/shared/platform/tracing";
import { paymentMessageFor } from "@commerce/testing/basics";
import { apiForFile, startApi } from "@commerce/testing/in-process";
import { orderKit, type Placed } from "@commerce/testing/orders";
import { applyPaymentMessage } from "../../payment-inbox/apply";
import { expireDueOrders } from "../expiry";
import { transition, transitionMany } from "./transition";

const { api, admin } = await apiForFile();

const { stockOf, eventsOf, eventNames, order, placed, patch } = orderKit(() => api);

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
        body: { status: "paid", note: "paid by bank transfer" },
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

  test("O7: a sweep told to stop ends after the order it is on, however many are overdue", async () => {
    const shortLived = await startApi({ env: { ORDER_TTL_SECONDS: "1" } });
    try {
      const product = await shortLived.product();
      const { token } = await shortLived.customer();
      for (let i = 0; i < 3; i++)
        expect(
          (
            await shortLived.call("POST", "/api/orders", {
              token,
              body: { product_id: product.id, qty: 1 },
            })
          ).status,
        ).toBe(201);
      await Bun.sleep(1100);
      let asked = 0;
      // The shutdown begins while the first order is being expired.
      const stopping = () => asked++ >= 1;
      expect(await expireDueOrders(shortLived.db, shortLived.deps.topology, 100, stopping)).toBe(1);
      expect(await expireDueOrders(shortLived.db, shortLived.deps.topology)).toBeGreaterThanOrEqual(
        2,
      );
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

describe("racing causes", () => {
  test("L1: cancel, payment and expiry racing on one order: exactly one move and one event", async () => {
    for (let round = 0; round < 5; round++) {
      const { customer, order: o } = await placed(3, 1);
      await api.sql`update api.orders set expires_at = now() - interval '1 second' where id = ${o.order_id}`;
      const results = await Promise.allSettled([
        patch(customer.token, o.order_id, "cancelled"),
        applyPaymentMessage(api.db, api.deps.topology, "succeeded", paymentMessageFor(o)),
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

describe("a batch of moves", () => {
  test("R5, M3, T1: transitionMany moves a batch as transition moves one order; orders it may not move are left alone", async () => {
    const [one, many, unpaid] = await Promise.all([placed(), placed(), placed()]);
    for (const o of [one, many])
      expect((await patch(admin, o.order.order_id, "paid")).status).toBe(200);
    const trace = parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");

    const byTransition = await api.db.transaction((tx) =>
      transition(tx, api.deps.topology, one.order.order_id, {
        to: "refunded",
        source: "manual",
        trace,
      }),
    );
    const moved = await transitionMany(
      api.db,
      api.deps.topology,
      { to: "refunded", source: "manual" },
      [many, unpaid].map((o) => ({ orderId: o.order.order_id, trace })),
    );
    expect([...moved]).toEqual([many.order.order_id]);
    expect(byTransition.moved).toBe(true);

    const refunded = async (orderId: number) => {
      const [row] = await api.sql`
        select subject, message_id, payload, headers from api.outbox
        where message_id = ${`order-refunded-${orderId}`}`;
      const read = await api.call("GET", `/api/orders/${orderId}`, { token: admin });
      return { row, read: read.json };
    };
    const single = await refunded(one.order.order_id);
    const batched = await refunded(many.order.order_id);
    expect(batched.read).toMatchObject({ status: "refunded", refunded_at: expect.any(String) });
    expect(batched.row.subject).toBe(single.row.subject);
    expect(batched.row.headers).toEqual(single.row.headers);
    expect(batched.row.payload).toEqual({
      ...single.row.payload,
      order_id: many.order.order_id,
      at: batched.read.refunded_at,
      customer_id: many.customer.sub,
      items: [{ product_id: many.product.id, name: many.product.name, qty: 1, unit_price: 500 }],
    });
    expect(parseOrderEvent(batched.row.payload)).toBeDefined();
    expect(await eventNames(many.order.order_id)).toEqual(["created", "paid", "refunded"]);
    const timeline = await api.call("GET", `/api/orders/${many.order.order_id}/events`, {
      token: admin,
    });
    expect(timeline.json.items.at(-1)).toMatchObject({ type: "refunded", source: "manual" });
    expect(await eventNames(unpaid.order.order_id)).toEqual(["created"]);
  });
});

import { describe, expect, test } from "bun:test";
import type { PaymentMessage } from "@commerce/shared/contract/messages";
import { paymentMessageFor } from "@commerce/testing/basics";
import { apiForFile } from "@commerce/testing/in-process";
import { applyPaymentMessage, type PaymentKind } from "../payment-inbox/apply";

const { api, admin } = await apiForFile();

type Placed = { order_id: number; amount: number; currency: string };

async function placed(stock: number | null = null) {
  const product = await api.product({ price: 700 });
  if (stock !== null)
    await api.call("PATCH", `/api/products/${product.id}`, { token: admin, body: { stock } });
  const customer = await api.customer();
  const res = await api.call("POST", "/api/orders", {
    token: customer.token,
    body: { product_id: product.id, qty: 2 },
  });
  return { product, customer, order: res.json as Placed };
}

const apply = (kind: PaymentKind, m: PaymentMessage) =>
  applyPaymentMessage(api.db, api.deps.topology, kind, m);

const reviewFor = async (notificationId: string) =>
  Number(
    (await api.sql`select id from api.payment_reviews where notification_id = ${notificationId}`)[0]
      .id,
  );
const resolve = (id: number, body: unknown, token = admin) =>
  api.call("POST", `/api/payment-reviews/${id}/resolve`, { token, body });
const timeline = async (orderId: number, token = admin) =>
  api.call("GET", `/api/orders/${orderId}/events`, { token });

describe("timeline", () => {
  test("T1: the timeline lists what happened, oldest first, with source and notification id", async () => {
    const { customer, order } = await placed();
    const paid = paymentMessageFor(order);
    await apply("succeeded", paid);
    await apply("refunded", paymentMessageFor(order, { amount: 100 }));
    const res = await timeline(order.order_id, customer.token);
    expect(res.status).toBe(200);
    const items = res.json.items;
    expect(items.map((e: { type: string }) => e.type)).toEqual([
      "created",
      "paid",
      "review_opened",
    ]);
    expect(items.map((e: { seq: number }) => e.seq)).toEqual([1, 2, 3]);
    expect(items[0]).toMatchObject({ source: "api", notification_id: null, detail: {} });
    expect(items[1]).toMatchObject({ source: "webhook", notification_id: paid.notification_id });
    expect(items[2].detail).toEqual({
      review_id: expect.any(Number),
      reason: "partial_refund",
      // M1: the payment the notification was about (its own id for the generic format).
      payment_ref: expect.any(String),
      provider: "generic",
    });
    for (const entry of items) expect(Date.parse(entry.at)).not.toBeNaN();
  });

  test("T1, A4: another customer gets 404; an admin reads any order's timeline", async () => {
    const { order } = await placed();
    const stranger = await api.customer();
    expect((await timeline(order.order_id, stranger.token)).status).toBe(404);
    expect((await timeline(order.order_id)).status).toBe(200);
    expect((await timeline(9_007_199_254_740_000)).status).toBe(404);
  });

  test("T1: a cancel shows its reason; a replay after the api lost its processed row changes nothing", async () => {
    const { customer, order } = await placed();
    const paid = paymentMessageFor(order);
    await apply("succeeded", paid);
    await api.sql`delete from api.processed_notifications where notification_id = ${paid.notification_id}`;
    expect(await apply("succeeded", paid)).toBe("duplicate");
    const other = await placed();
    await api.call("PATCH", `/api/orders/${other.order.order_id}`, {
      token: other.customer.token,
      body: { status: "cancelled" },
    });
    const cancelled = (await timeline(other.order.order_id)).json.items[1];
    expect(cancelled).toMatchObject({
      type: "cancelled",
      source: "api",
      detail: { reason: "customer" },
    });
    const types = (await timeline(order.order_id, customer.token)).json.items.map(
      (e: { type: string }) => e.type,
    );
    expect(types).toEqual(["created", "paid"]);
  });
});

describe("payment reviews", () => {
  test("V1: admins list reviews newest first, filter by status, and read one; customers get 403", async () => {
    const { order } = await placed();
    const m = paymentMessageFor(order, { amount: 1 });
    expect(await apply("succeeded", m)).toBe("mismatch");
    const id = await reviewFor(m.notification_id);
    const one = await api.call("GET", `/api/payment-reviews/${id}`, { token: admin });
    expect(one.status).toBe(200);
    expect(one.json).toEqual({
      id,
      order_id: order.order_id,
      notification_id: m.notification_id,
      event: "payment.succeeded",
      reason: "mismatch",
      amount: 1,
      currency: order.currency,
      expected_amount: order.amount,
      expected_currency: order.currency,
      created_at: expect.stringMatching(/^\d{4}-/),
      status: "open",
      resolution: null,
      note: null,
      resolved_at: null,
    });
    const open = await api.call("GET", "/api/payment-reviews?status=open&per_page=100", {
      token: admin,
    });
    expect(open.json.items.map((r: { id: number }) => r.id)).toContain(id);
    const ids = open.json.items.map((r: { id: number }) => r.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    const customer = await api.customer();
    expect((await api.call("GET", "/api/payment-reviews", { token: customer.token })).status).toBe(
      403,
    );
    expect(
      (await api.call("GET", "/api/payment-reviews/999999999999", { token: admin })).status,
    ).toBe(404);
  });

  test("V2: dismiss changes no order and is on the timeline; resolving again is 409", async () => {
    const { order } = await placed();
    const m = paymentMessageFor(order, { currency: "EUR" });
    await apply("succeeded", m);
    const id = await reviewFor(m.notification_id);
    const dismissed = await resolve(id, { action: "dismiss", note: "test payment from QA" });
    expect(dismissed.status).toBe(200);
    expect(dismissed.json).toMatchObject({
      status: "resolved",
      resolution: "dismissed",
      note: "test payment from QA",
    });
    const again = await resolve(id, { action: "apply", note: "changed my mind" });
    expect(again.status).toBe(409);
    const entries = (await timeline(order.order_id)).json.items;
    expect(entries.map((e: { type: string }) => e.type)).toEqual([
      "created",
      "review_opened",
      "review_resolved",
    ]);
    expect(entries[2]).toMatchObject({
      source: "review",
      detail: { review_id: id, resolution: "dismissed" },
    });
    expect(
      (await api.call("GET", `/api/orders/${order.order_id}`, { token: admin })).json.status,
    ).toBe("created");
  });

  test("V2, L1: apply on a payment for a cancelled order pays it once and takes its stock again", async () => {
    const { product, customer, order } = await placed(5);
    await api.call("PATCH", `/api/orders/${order.order_id}`, {
      token: customer.token,
      body: { status: "cancelled" },
    });
    const m = paymentMessageFor(order);
    expect(await apply("succeeded", m)).toBe("order_not_payable");
    const id = await reviewFor(m.notification_id);
    const applied = await resolve(id, { action: "apply", note: "captured after cancel; keep it" });
    expect(applied.status).toBe(200);
    expect(applied.json.resolution).toBe("applied");
    const read = await api.call("GET", `/api/orders/${order.order_id}`, { token: admin });
    expect(read.json.status).toBe("paid");
    const [{ stock }] = await api.sql`select stock from api.products where id = ${product.id}`;
    expect(stock).toBe(3);
    const paidEvents = await api.sql`
      select payload from api.outbox where subject = ${api.deps.topology.orders.event("paid")}
      and payload->>'order_id' = ${String(order.order_id)}`;
    expect(paidEvents).toHaveLength(1);
    expect(paidEvents[0].payload).toMatchObject({
      source: "review",
      notification_id: m.notification_id,
    });
  });

  test("V2: apply when the stock is gone is 409 and the review stays open", async () => {
    const { product, customer, order } = await placed(2);
    await api.call("PATCH", `/api/orders/${order.order_id}`, {
      token: customer.token,
      body: { status: "cancelled" },
    });
    await api.call("PATCH", `/api/products/${product.id}`, { token: admin, body: { stock: 1 } });
    const m = paymentMessageFor(order);
    await apply("succeeded", m);
    const id = await reviewFor(m.notification_id);
    const res = await resolve(id, { action: "apply", note: "try" });
    expect(res.status).toBe(409);
    const review = await api.call("GET", `/api/payment-reviews/${id}`, { token: admin });
    expect(review.json.status).toBe("open");
    const read = await api.call("GET", `/api/orders/${order.order_id}`, { token: admin });
    expect(read.json.status).toBe("cancelled");
  });

  test("V2: apply on a duplicate payment or an unknown order is 409; the review stays open", async () => {
    const { order } = await placed();
    await apply("succeeded", paymentMessageFor(order));
    const second = paymentMessageFor(order);
    expect(await apply("succeeded", second)).toBe("duplicate_payment");
    const dup = await reviewFor(second.notification_id);
    expect((await resolve(dup, { action: "apply", note: "x" })).status).toBe(409);
    const ghost = paymentMessageFor({
      ...order,
      order_id: 8_000_000_000_000 + Math.floor(Math.random() * 1e12),
    });
    await apply("succeeded", ghost);
    const unknown = await reviewFor(ghost.notification_id);
    expect((await resolve(unknown, { action: "apply", note: "x" })).status).toBe(409);
    expect((await resolve(unknown, { action: "dismiss", note: "not ours" })).status).toBe(200);
  });

  test("V2: two admins resolving at once: one wins, the other gets 409, the order moves once", async () => {
    const { order } = await placed();
    const m = paymentMessageFor(order, { amount: order.amount + 5 });
    await apply("succeeded", m);
    const id = await reviewFor(m.notification_id);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        resolve(id, {
          action: i % 2 ? "dismiss" : "apply",
          note: `admin ${i}`,
          ...(i % 2 ? {} : { accept_amount: true }),
        }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    const moves = (await timeline(order.order_id)).json.items.filter(
      (e: { type: string }) => e.type === "paid",
    );
    const winner = results.find((r) => r.status === 200)?.json;
    expect(moves).toHaveLength(winner.resolution === "applied" ? 1 : 0);
  });

  test("V2: a resolve body needs action apply or dismiss and a note of 1 to 1000 characters", async () => {
    const { order } = await placed();
    const m = paymentMessageFor(order, { amount: 3 });
    await apply("succeeded", m);
    const id = await reviewFor(m.notification_id);
    for (const body of [
      { action: "apply" },
      { action: "pay", note: "x" },
      { action: "dismiss", note: "" },
    ])
      expect((await resolve(id, body)).status).toBe(400);
    const customer = await api.customer();
    expect((await resolve(id, { action: "dismiss", note: "x" }, customer.token)).status).toBe(403);
  });

  test("O3: /metrics shows open reviews by reason and the oldest order reported paid", async () => {
    const { order } = await placed();
    await apply("succeeded", paymentMessageFor(order, { amount: 2 }));
    const text = (await api.call("GET", "/metrics")).text;
    expect(text).toMatch(/^payment_reviews_open\{reason="mismatch"\} [1-9]\d*$/m);
    const age = Number(text.match(/^reported_paid_order_oldest_age_seconds (\S+)$/m)?.[1]);
    expect(age).toBeGreaterThan(0);
  });
});

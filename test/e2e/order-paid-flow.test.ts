import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  type ApiClient,
  apiClient,
  type PaymentNotification,
  sendPaymentNotification,
} from "@commerce/client";
import { signPayload } from "@commerce/shared/contract/signature";
import { eventually, unique, webhookSecret } from "@commerce/testing/basics";
import { type Stack, startStack, succeeded } from "@commerce/testing/processes";

setDefaultTimeout(30_000);

// The typed clients (D3): a route change that breaks these calls fails the type check.
let stack: Stack;
let admin: ApiClient;
let customer: ApiClient;
beforeAll(async () => {
  stack = await startStack();
  admin = apiClient(stack.api.url, stack.admin);
  customer = apiClient(stack.api.url, stack.customer);
});
afterAll(() => stack.stop());

/** A product of its own and one order for it, placed by the stack's customer. */
async function newOrder(price = 1999, qty = 1) {
  const product = await admin.api.products.post({ name: "Lamp", price, category: unique("c") });
  if (!product.data) throw new Error(`product: ${product.status}`);
  const order = await customer.api.orders.post({ product_id: product.data.id, qty });
  if (!order.data) throw new Error(`order: ${order.status}`);
  expect(order.response.headers.get("location")).toBe(`/api/orders/${order.data.order_id}`);
  return order.data;
}

const notify = (
  notification: PaymentNotification,
  options: { secret?: string; at?: number } = {},
) =>
  sendPaymentNotification(stack.payments.url, notification, { secret: webhookSecret, ...options });

describe("order paid, end to end over NATS JetStream", () => {
  test("W5, M1, M2, M3, R5: a valid notification pays the order and publishes one orders.paid", async () => {
    const order = await newOrder(2500, 2);
    const res = await notify(succeeded(order));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true });
    await stack.paid(order.order_id);
    const messages = await eventually(async () => {
      const found = await stack.ordersPaidMessages(order.order_id);
      return found.length ? found : undefined;
    });
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      order_id: order.order_id,
      amount: 5000,
      currency: "USD",
      source: "webhook",
    });
  });

  test("O3: metrics show the outbox backlog, notifications by outcome and messages applied", async () => {
    const order = await newOrder();
    await notify(succeeded(order));
    await stack.paid(order.order_id);
    const payments = await eventually(async () => {
      const text = await (await fetch(`${stack.payments.url}/metrics`)).text();
      return /^outbox_backlog 0$/m.test(text) ? text : undefined;
    });
    expect(payments).toMatch(/notifications_total\{outcome="accepted",reason="none"\} [1-9]/);
    const api = await eventually(async () => {
      const text = await (await fetch(`${stack.api.url}/metrics`)).text();
      return /^outbox_backlog 0$/m.test(text) ? text : undefined;
    });
    expect(api).toMatch(/payment_messages_total\{outcome="paid"\} [1-9]/);
    expect(api).toMatch(/^payment_consumer_lag \d+$/m);
  });

  test("X2 (v5): each running service (source or binary) has the guard against unhandled errors: counted, none so far", async () => {
    for (const url of [stack.api.url, stack.payments.url]) {
      const text = await (await fetch(`${url}/metrics`)).text();
      expect(text).toMatch(/^process_unhandled_errors_total\{kind="rejection"\} 0$/m);
      expect(text).toMatch(/^process_unhandled_errors_total\{kind="exception"\} 0$/m);
    }
  });

  test("W2: forged, stale, future, tampered and unsigned notifications are 401 and change nothing", async () => {
    const order = await newOrder();
    const body = succeeded(order);
    const now = Math.floor(Date.now() / 1000);
    expect((await notify(body, { secret: "whsec_wrong" })).status).toBe(401);
    expect((await notify(body, { at: now - 301 })).status).toBe(401);
    expect((await notify(body, { at: now + 360 })).status).toBe(401);
    const raw = JSON.stringify(body);
    const url = `${stack.payments.url}/api/webhooks/payment`;
    const tampered = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-signature": signPayload(raw, webhookSecret, now),
      },
      body: raw.replace(`"amount":${order.amount}`, `"amount":${order.amount + 1}`),
    });
    expect(tampered.status).toBe(401);
    const unsigned = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: raw,
    });
    expect(unsigned.status).toBe(401);
    const [{ n }] =
      await stack.sql`select count(*)::int as n from payments.notifications where order_id = ${order.order_id}`;
    expect(n).toBe(0);
    await Bun.sleep(300);
    expect(await stack.orderStatus(order.order_id)).toBe("created");
  });

  test("W8: 50 concurrent copies give one stored notification, one move and one orders.paid", async () => {
    const order = await newOrder();
    const body = succeeded(order);
    const answers = await Promise.all(Array.from({ length: 50 }, () => notify(body)));
    expect(answers.every((a) => a.status === 200 && "received" in a.body)).toBe(true);
    expect(answers.filter((a) => !("duplicate" in a.body))).toHaveLength(1);
    await stack.paid(order.order_id);
    const [{ n }] =
      await stack.sql`select count(*)::int as n from payments.notifications where order_id = ${order.order_id}`;
    expect(n).toBe(1);
    await Bun.sleep(300);
    expect(await stack.publishedOrdersPaid(order.order_id)).toHaveLength(1);
  });

  test("M2: amount mismatch and unknown order do not pay; the cases are kept for review", async () => {
    const order = await newOrder(1000);
    const wrong = succeeded(order, { amount: 999 });
    expect((await notify(wrong)).status).toBe(200);
    const unknownOrder = {
      order_id: 8_000_000_000_000 + Math.floor(Math.random() * 1e9),
      amount: 5,
      currency: "USD",
    };
    const unknown = succeeded(unknownOrder);
    expect((await notify(unknown)).status).toBe(200);
    for (const id of [wrong.id, unknown.id])
      await eventually(
        async () =>
          (await stack.sql`select 1 from api.payment_reviews where notification_id = ${id}`)[0],
        10_000,
      );
    expect(await stack.orderStatus(order.order_id)).toBe("created");
  });

  test("V2: the provider's 1 cent for a 750 USD order cannot pay it by a plain apply of its review", async () => {
    const order = await newOrder(75_000);
    const cent = succeeded(order, { amount: 1 });
    expect((await notify(cent)).status).toBe(200);
    const [{ id }] = await eventually(async () => {
      const rows = await stack.sql`
        select id from api.payment_reviews where notification_id = ${cent.id}`;
      return rows.length ? rows : undefined;
    }, 10_000);
    const review = admin.api["payment-reviews"]({ id: Number(id) });
    const shown = await review.get();
    expect(shown.data).toMatchObject({
      reason: "mismatch",
      amount: 1,
      expected_amount: 75_000,
      expected_currency: "USD",
    });
    const plain = await review.resolve.post({ action: "apply", note: "the customer says so" });
    expect(plain.status).toBe(409);
    expect(await stack.orderStatus(order.order_id)).toBe("created");
    const accepted = await review.resolve.post({
      action: "apply",
      note: "the rest arrived by bank transfer",
      accept_amount: true,
    });
    expect(accepted.status).toBe(200);
    expect(await stack.orderStatus(order.order_id)).toBe("paid");
  });

  test("R5: a manual PATCH racing the webhook gives one move and one orders.paid", async () => {
    const order = await newOrder();
    const [patch, hook] = await Promise.all([
      admin.api
        .orders({ order_id: order.order_id })
        .patch({ status: "paid", note: "paid by bank transfer" }),
      notify(succeeded(order)),
    ]);
    expect(patch.status).toBe(200);
    expect(hook.status).toBe(200);
    await stack.paid(order.order_id);
    await Bun.sleep(500);
    expect(await stack.publishedOrdersPaid(order.order_id)).toHaveLength(1);
  });

  test("W6, M2: with the api stopped, accepted notifications are all paid once it returns", async () => {
    const orders = await Promise.all(Array.from({ length: 10 }, () => newOrder()));
    expect(await stack.api.stop()).toBe(0);
    for (const order of orders) expect((await notify(succeeded(order))).status).toBe(200);
    await Bun.sleep(200);
    expect(await stack.orderStatus(orders[0].order_id)).toBe("created");
    await stack.api.start();
    for (const order of orders) await stack.paid(order.order_id);
    for (const order of orders)
      expect(await stack.publishedOrdersPaid(order.order_id)).toHaveLength(1);
  });
});

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { OrdersPaid } from "@commerce/shared/messages";
import { signPayload } from "@commerce/shared/signature";
import { eventually, testDatabaseUrl, unique } from "@commerce/shared/testing";
import { SignJWT } from "jose";
import postgres from "postgres";
import { jwtSecret, type Stack, startStack, webhookSecret } from "./stack";

setDefaultTimeout(30_000);

let stack: Stack;
const sql = postgres(testDatabaseUrl, { max: 4, onnotice: () => {} });
let admin: string;
let customer: string;

const sign = (sub: string, scope?: string) =>
  new SignJWT(scope ? { scope } : {})
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(sub)
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(jwtSecret));

beforeAll(async () => {
  stack = await startStack();
  admin = await sign(unique("admin"), "admin");
  customer = await sign(unique("cust"));
});
afterAll(async () => {
  await stack.stop();
  await sql.end();
});

async function callApi(method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(`${stack.api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

async function newOrder(price = 1999, qty = 1) {
  const product = await callApi("POST", "/api/products", admin, {
    name: "Lamp",
    price,
    category: unique("c"),
  });
  const order = await callApi("POST", "/api/orders", customer, {
    product_id: product.json.id,
    qty,
  });
  return order.json as { order_id: number; amount: number; currency: string };
}

async function notify(
  body: object,
  { secret = webhookSecret, at = Math.floor(Date.now() / 1000) } = {},
) {
  const raw = JSON.stringify(body);
  const res = await fetch(`${stack.payments.url}/api/webhooks/payment`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-signature": signPayload(raw, secret, at) },
    body: raw,
  });
  return { status: res.status, json: (await res.json()) as any };
}

const succeeded = (order: { order_id: number; amount: number; currency: string }, extra = {}) => ({
  event: "payment.succeeded",
  order_id: order.order_id,
  amount: order.amount,
  currency: order.currency,
  id: unique("evt"),
  ...extra,
});

const orderStatus = async (id: number) =>
  (await sql`select status from api.orders where id = ${id}`)[0]?.status;

/** The orders.paid messages JetStream holds for one order (R5: there must be exactly one). */
async function ordersPaidMessages(orderId: number): Promise<OrdersPaid[]> {
  const js = stack.nats.jetstream();
  if (!js) throw new Error("nats down");
  const jsm = await stack.nats.manager();
  const info = await jsm.streams.info(stack.topology.orders.stream);
  const found: OrdersPaid[] = [];
  for (
    let seq = info.state.first_seq;
    seq <= info.state.last_seq && info.state.messages > 0;
    seq++
  ) {
    const message = await jsm.streams
      .getMessage(stack.topology.orders.stream, { seq })
      .catch(() => undefined);
    const payload = message?.json<OrdersPaid>();
    if (payload?.order_id === orderId) found.push(payload);
  }
  return found;
}

const paid = (id: number, timeoutMs = 10_000) =>
  eventually(
    async () => ((await orderStatus(id)) === "paid" ? true : undefined),
    timeoutMs,
    `order ${id} paid`,
  );

describe("order paid, end to end over NATS JetStream", () => {
  test("W5, M1, M2, M3, R5: a valid notification pays the order and publishes one orders.paid", async () => {
    const order = await newOrder(2500, 2);
    const res = await notify(succeeded(order));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ received: true });
    await paid(order.order_id);
    const messages = await eventually(async () => {
      const found = await ordersPaidMessages(order.order_id);
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

  test("W2: forged, stale, future, tampered and unsigned notifications are 401 and change nothing", async () => {
    const order = await newOrder();
    const body = succeeded(order);
    const now = Math.floor(Date.now() / 1000);
    expect((await notify(body, { secret: "whsec_wrong" })).status).toBe(401);
    expect((await notify(body, { at: now - 301 })).status).toBe(401);
    expect((await notify(body, { at: now + 301 })).status).toBe(401);
    const raw = JSON.stringify(body);
    const tampered = await fetch(`${stack.payments.url}/api/webhooks/payment`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-signature": signPayload(raw, webhookSecret, now),
      },
      body: raw.replace(`"amount":${order.amount}`, `"amount":${order.amount + 1}`),
    });
    expect(tampered.status).toBe(401);
    const unsigned = await fetch(`${stack.payments.url}/api/webhooks/payment`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: raw,
    });
    expect(unsigned.status).toBe(401);
    const [{ n }] =
      await sql`select count(*)::int as n from payments.notifications where order_id = ${order.order_id}`;
    expect(n).toBe(0);
    await Bun.sleep(300);
    expect(await orderStatus(order.order_id)).toBe("created");
  });

  test("W8: 50 concurrent copies give one stored notification, one move and one orders.paid", async () => {
    const order = await newOrder();
    const body = succeeded(order);
    const answers = await Promise.all(Array.from({ length: 50 }, () => notify(body)));
    expect(answers.every((a) => a.status === 200 && a.json.received === true)).toBe(true);
    expect(answers.filter((a) => !a.json.duplicate)).toHaveLength(1);
    await paid(order.order_id);
    const [{ n }] =
      await sql`select count(*)::int as n from payments.notifications where order_id = ${order.order_id}`;
    expect(n).toBe(1);
    await Bun.sleep(300);
    expect(await ordersPaidMessages(order.order_id)).toHaveLength(1);
  });

  test("M2: amount mismatch and unknown order do not pay; the cases are kept for review", async () => {
    const order = await newOrder(1000);
    const wrong = succeeded(order, { amount: 999 });
    expect((await notify(wrong)).status).toBe(200);
    const unknown = succeeded({
      order_id: 8_000_000_000_000 + Math.floor(Math.random() * 1e9),
      amount: 5,
      currency: "USD",
    });
    expect((await notify(unknown)).status).toBe(200);
    for (const id of [wrong.id, unknown.id])
      await eventually(
        async () => (await sql`select 1 from api.payment_reviews where notification_id = ${id}`)[0],
        10_000,
      );
    expect(await orderStatus(order.order_id)).toBe("created");
  });

  test("R5: a manual PATCH racing the webhook gives one move and one orders.paid", async () => {
    const order = await newOrder();
    const [patch, hook] = await Promise.all([
      callApi("PATCH", `/api/orders/${order.order_id}`, admin, { status: "paid" }),
      notify(succeeded(order)),
    ]);
    expect(patch.status).toBe(200);
    expect(hook.status).toBe(200);
    await paid(order.order_id);
    await Bun.sleep(500);
    expect(await ordersPaidMessages(order.order_id)).toHaveLength(1);
  });

  test("W6, M2: with the api stopped, accepted notifications are all paid once it returns", async () => {
    const orders = await Promise.all(Array.from({ length: 10 }, () => newOrder()));
    expect(await stack.api.stop()).toBe(0);
    for (const order of orders) expect((await notify(succeeded(order))).status).toBe(200);
    await Bun.sleep(200);
    expect(await orderStatus(orders[0].order_id)).toBe("created");
    await stack.api.start();
    for (const order of orders) await paid(order.order_id);
    for (const order of orders) expect(await ordersPaidMessages(order.order_id)).toHaveLength(1);
  });
});

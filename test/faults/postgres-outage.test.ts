import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { type PlacedOrder, succeeded } from "@commerce/testing/processes";
import { recordFigures } from "./figures";
import { type Delivery, Provider } from "./provider";
import {
  answers,
  faultStackForFile,
  holdRowLock,
  paidOnce,
  placeOrders,
  seconds,
  settle,
  someoneWaitsOnLock,
  tableCounts,
  timeUntil,
} from "./support";

setDefaultTimeout(150_000);

const env = await faultStackForFile();

type Answer = {
  what: string;
  status: number | "connection error";
  contentType: string | null;
  ms: number;
};

describe("PostgreSQL outage", () => {
  test("W6, O2, E2, M2: with PostgreSQL stopped every request that needs it is 5xx problem+json, never 2xx; /ready is 503 on both; both recover by themselves", async () => {
    const { stack, postgres } = env;
    const orders = await placeOrders(stack, 20);
    const [early, late] = [orders.slice(0, 10), orders.slice(10)];
    const [product] =
      await stack.sql`select product_id from api.order_items where order_id = ${early[0].order_id}`;
    const before = await tableCounts(stack);
    const provider = new Provider(stack.payments.url);
    const startedAt = performance.now();

    // The api's consumer is held by a row lock inside the transaction of the first message, so
    // the outage also hits messages it is applying; the other nine wait behind it.
    const lock = await holdRowLock(postgres.url, "orders", early[0].order_id);
    const earlyDeliveries: Delivery[] = [];
    for (const order of early) earlyDeliveries.push(await provider.deliver(succeeded(order)));
    expect(earlyDeliveries.every((d) => d.accepted && d.attempts.length === 1)).toBe(true);
    await timeUntil(
      () => someoneWaitsOnLock(stack),
      10_000,
      "the consumer to wait on the locked order",
    );

    await postgres.stop();
    await lock.release();
    const downAt = performance.now();

    const answered: Answer[] = [];
    const timeout = 20_000; // generous: a busy machine may be slow, and slow is not the point here
    type Answered = { status: number; headers: Headers };
    const call = async (what: string, send: () => Promise<Answered>) => {
      const sentAt = performance.now();
      const ms = () => Math.round(performance.now() - sentAt);
      try {
        const response = await send();
        const contentType = response.headers.get("content-type");
        answered.push({ what, status: response.status, contentType, ms: ms() });
      } catch {
        answered.push({ what, status: "connection error", contentType: null, ms: ms() });
      }
    };
    const { customer, admin } = stack;
    // Every api route that needs the database, as a customer or an admin would call it.
    const apiRequests: Array<[method: string, path: string, token: string, body?: object]> = [
      ["GET", "/api/products", customer],
      ["GET", `/api/products/${product.product_id}`, customer],
      ["POST", "/api/products", admin, { name: "Lamp", price: 1, category: "outage" }],
      ["PATCH", `/api/products/${product.product_id}`, admin, { price: 2 }],
      ["POST", "/api/orders", customer, { product_id: product.product_id, qty: 1 }],
      ["GET", "/api/orders", customer],
      ["GET", `/api/orders/${early[1].order_id}`, customer],
      [
        "PATCH",
        `/api/orders/${late[9].order_id}`,
        admin,
        { status: "paid", note: "paid by bank transfer" },
      ],
      ["GET", "/api/cart", customer],
      ["PUT", `/api/cart/items/${product.product_id}`, customer, { qty: 1 }],
      ["DELETE", `/api/cart/items/${product.product_id}`, customer],
    ];
    const lateBodies = late.map((order: PlacedOrder) => succeeded(order));
    const ready: Record<string, number[]> = { api: [], payments: [] };
    const health: Record<string, number[]> = { api: [], payments: [] };
    // Twice: at once, and after the services had a second to notice.
    for (const round of [0, 1]) {
      if (round) await Bun.sleep(1_000);
      for (const body of lateBodies.slice(round * 5, round * 5 + 5))
        await call("POST /api/webhooks/payment", async () => {
          const attempt = await provider.attempt(body, timeout);
          if (attempt.status === "connection error") throw new Error("no answer");
          return {
            status: attempt.status,
            headers: new Headers({ "content-type": attempt.contentType ?? "" }),
          };
        });
      for (const [method, path, token, body] of apiRequests)
        await call(`${method} ${path}`, () =>
          fetch(`${stack.api.url}${path}`, {
            method,
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            body: body && JSON.stringify(body),
            signal: AbortSignal.timeout(timeout),
          }),
        );
      for (const service of [stack.api, stack.payments]) {
        ready[service.name].push((await fetch(`${service.url}/ready`)).status);
        health[service.name].push((await fetch(`${service.url}/health`)).status);
      }
    }

    await postgres.start();
    const recoveredMs = {
      api: await timeUntil(() => answers(`${stack.api.url}/ready`, 200), 30_000, "api ready"),
      payments: await timeUntil(
        () => answers(`${stack.payments.url}/ready`, 200),
        30_000,
        "payments ready",
      ),
    };
    const outageSeconds = seconds(downAt);
    const lateDeliveries = await provider.deliverAll(lateBodies, 5);
    const deliveries = [...earlyDeliveries, ...lateDeliveries];
    const outcome = await settle(stack, deliveries, before, 90_000);

    const refused = answered.filter((a) => a.status === "connection error").length;
    recordFigures("PostgreSQL stopped", {
      rules: "W6 O2 E2 M2",
      requests: provider.requests + answered.filter((a) => !a.what.includes("webhooks")).length + 8,
      faults: "PostgreSQL fast shutdown ×1 (open transactions cut), restarted on the same port",
      notifications: deliveries.length,
      accepted: outcome.accepted,
      lost: outcome.lost,
      applied_twice: outcome.appliedTwice,
      seconds: seconds(startedAt),
      outage_seconds: outageSeconds,
      answers_during_outage: Object.fromEntries(
        [...new Set(answered.map((a) => String(a.status)))].map((s) => [
          s,
          answered.filter((a) => String(a.status) === s).length,
        ]),
      ),
      slowest_answer_during_outage_ms: Math.max(...answered.map((a) => a.ms)),
      api_ready_again_ms: recoveredMs.api,
      payments_ready_again_ms: recoveredMs.payments,
    });

    expect(answered.filter((a) => a.status !== 503)).toEqual([]);
    expect(refused).toBe(0);
    expect(answered.every((a) => a.contentType === "application/problem+json")).toBe(true);
    // A provider waiting 10 s for an answer gets its 503 in time, and retries.
    expect(Math.max(...answered.map((a) => a.ms))).toBeLessThan(5_000);
    expect(Math.max(recoveredMs.api, recoveredMs.payments)).toBeLessThan(5_000);
    expect(ready).toEqual({ api: [503, 503], payments: [503, 503] });
    expect(health).toEqual({ api: [200, 200], payments: [200, 200] });
    expect(outcome.accepted).toBe(20);
    expect(outcome.lost).toBe(0);
    expect(outcome.appliedTwice).toBe(0);
    expect(outcome.changed).toEqual(paidOnce(20));
  });
});

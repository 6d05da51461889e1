import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { unique } from "@commerce/testing/basics";
import { type Stack, startStack, succeeded } from "@commerce/testing/processes";

setDefaultTimeout(60_000);

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.stop());

/** Sends requests from `workers` loops until `stopAfterMs`, recording what each one answered. */
async function load<T>(workers: number, send: () => Promise<T>, during: () => Promise<void>) {
  const answered: T[] = [];
  let refused = 0;
  let running = true;
  const loops = Array.from({ length: workers }, async () => {
    for (let i = 0; running && i < 500; i++) {
      try {
        answered.push(await send());
      } catch {
        refused++;
        await Bun.sleep(5);
      }
    }
  });
  await during();
  running = false;
  await Promise.all(loops);
  return { answered, refused };
}

describe("graceful shutdown", () => {
  test("O7: SIGTERM during a burst of notifications loses no accepted one and exits 0 within 10 s", async () => {
    const order = await stack.newOrder();
    let exit: { code: number | null; ms: number } = { code: null, ms: 0 };
    const { answered } = await load(
      16,
      async () => {
        const body = succeeded(order, { event: "payment.pending", id: unique("evt") });
        const res = await stack.notify(body);
        return { id: body.id, status: res.status };
      },
      async () => {
        await Bun.sleep(300);
        const started = performance.now();
        const code = await stack.payments.stop("SIGTERM");
        exit = { code, ms: performance.now() - started };
      },
    );
    expect(exit.code).toBe(0);
    expect(exit.ms).toBeLessThan(10_000);
    const accepted = answered.filter((a) => a.status === 200).map((a) => a.id);
    expect(accepted.length).toBeGreaterThan(0);
    expect(answered.every((a) => a.status === 200 || a.status >= 500)).toBe(true);
    const stored =
      await stack.sql`select id from payments.notifications where id in ${stack.sql(accepted)}`;
    expect(stored.length).toBe(accepted.length);
    await stack.payments.start();
  });

  test("O7: SIGTERM during a burst of orders loses no created one and exits 0 within 10 s", async () => {
    const product = await stack.callApi("POST", "/api/products", stack.admin, {
      name: "Cup",
      price: 100,
      category: unique("c"),
    });
    let exit: { code: number | null; ms: number } = { code: null, ms: 0 };
    const { answered } = await load(
      16,
      () =>
        stack.callApi("POST", "/api/orders", stack.customer, {
          product_id: product.json.id,
          qty: 1,
        }),
      async () => {
        await Bun.sleep(300);
        const started = performance.now();
        const code = await stack.api.stop("SIGTERM");
        exit = { code, ms: performance.now() - started };
      },
    );
    expect(exit.code).toBe(0);
    expect(exit.ms).toBeLessThan(10_000);
    const created = answered.filter((a) => a.status === 201).map((a) => a.json.order_id as number);
    expect(created.length).toBeGreaterThan(0);
    const stored = await stack.sql`select id from api.orders where id in ${stack.sql(created)}`;
    expect(stored.length).toBe(created.length);
    await stack.api.start();
  });
});

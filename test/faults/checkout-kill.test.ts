import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { signToken, testDatabaseUrl, unique } from "@commerce/testing/basics";
import { type Stack, startStack } from "@commerce/testing/processes";
import { holdRowLock, someoneWaitsOnLock, timeUntil } from "./support";

setDefaultTimeout(120_000);

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ start: ["api"] });
});
afterAll(() => stack?.stop());

describe("api killed mid-checkout", () => {
  test("C4, L2: checkouts cut off by SIGKILL leave a whole order with its stock taken, or nothing", async () => {
    const { callApi, admin } = stack;
    const tracked = await callApi("POST", "/api/products", admin, {
      name: "Kettle",
      price: 2500,
      category: unique("c"),
      stock: 1000,
    });
    const untracked = await callApi("POST", "/api/products", admin, {
      name: "Cup",
      price: 400,
      category: unique("c"),
    });
    const customers = await Promise.all(
      Array.from({ length: 30 }, async () => {
        const token = await signToken(unique("cust"));
        await callApi("PUT", `/api/cart/items/${tracked.json.id}`, token, { qty: 2 });
        await callApi("PUT", `/api/cart/items/${untracked.json.id}`, token, { qty: 1 });
        return token;
      }),
    );

    // Ten check out whole; then the kettle's row is held, so the other twenty stop inside their
    // transactions, order and lines written, waiting to take the stock, when the api is killed.
    const done = await Promise.all(
      customers.slice(0, 10).map((token) => callApi("POST", "/api/cart/checkout", token)),
    );
    expect(done.map((r) => r.status)).toEqual(Array(10).fill(201));
    const lock = await holdRowLock(testDatabaseUrl, "products", tracked.json.id);
    const cut = customers
      .slice(10)
      .map((token) => callApi("POST", "/api/cart/checkout", token).catch(() => undefined));
    await timeUntil(() => someoneWaitsOnLock(stack), 10_000, "a checkout waiting on the stock");
    await Bun.sleep(200);
    await stack.api.stop("SIGKILL");
    await Promise.all(cut);
    await lock.release();
    await stack.api.start();

    const [{ stock }] =
      await stack.sql`select stock from api.products where id = ${tracked.json.id}`;
    const lines = await stack.sql<{ order_id: number; product_id: number; qty: number }[]>`
      select order_id, product_id, qty from api.order_items
      where product_id in (${tracked.json.id}, ${untracked.json.id})`;
    const orders = new Set(lines.map((line) => line.order_id));
    const takenByOrders = lines
      .filter((line) => line.product_id === tracked.json.id)
      .reduce((sum, line) => sum + line.qty, 0);
    // Every order that exists is whole (both lines), and the stock taken is exactly theirs.
    for (const id of orders) expect(lines.filter((l) => l.order_id === id)).toHaveLength(2);
    expect(1000 - stock).toBe(takenByOrders);
    expect(orders.size).toBeGreaterThanOrEqual(10);
    expect(orders.size).toBeLessThan(30);
    // A customer whose checkout was cut off still has the cart; one whose order exists has none.
    for (const token of customers) {
      const cart = await callApi("GET", "/api/cart", token);
      const mine = await callApi("GET", "/api/orders", token);
      expect(cart.json.items.length === 0).toBe(mine.json.total === 1);
      expect(cart.json.items.length === 2).toBe(mine.json.total === 0);
    }
    // A cut-off checkout can simply be sent again.
    let retried = 0;
    for (const token of customers)
      if ((await callApi("GET", "/api/cart", token)).json.items.length) {
        expect((await callApi("POST", "/api/cart/checkout", token)).status).toBe(201);
        retried++;
      }
    expect(retried).toBe(30 - orders.size);
  });
});

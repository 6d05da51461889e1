import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually, unique } from "@commerce/testing/basics";
import { type PlacedOrder, type Stack, startStack, succeeded } from "@commerce/testing/processes";

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

  test("O7 (v5): SIGTERM while the api applies a stream of payments cuts none off and delays none: no failure logged, each order paid once within seconds of the restart", async () => {
    // 60 at a time: 600 at once can time out on a loaded machine before the test begins.
    const orders: PlacedOrder[] = [];
    for (let i = 0; i < 10; i++)
      orders.push(...(await Promise.all(Array.from({ length: 60 }, () => stack.newOrder()))));
    const ids = orders.map((o) => o.order_id);
    const paidCount = async () => {
      const [row] = await stack.sql<{ n: number }[]>`
        select count(*)::int as n from api.orders where id in ${stack.sql(ids)} and status = 'paid'`;
      return row.n;
    };
    const outputBefore = stack.api.output.length;
    let next = 0;
    let paidAtStop = 0;
    const stopped = { code: null as number | null };
    const unsent: string[] = [];
    await load(
      16,
      async () => {
        const order = orders[next++];
        if (!order) throw new Error("all sent");
        // As a provider does: a notification not answered 200 is sent again, so an order left
        // unpaid is the api's doing, not a request the test gave up on.
        for (let attempt = 1; ; attempt++) {
          const status = await stack.notify(succeeded(order)).then(
            (res) => res.status,
            (error: unknown) => String(error),
          );
          if (status === 200) return;
          if (attempt === 5) return void unsent.push(`${order.order_id}: ${status}`);
          await Bun.sleep(100);
        }
      },
      async () => {
        // Stop the api once it is applying, with payments still arriving.
        await eventually(async () => ((await paidCount()) > 20 ? true : undefined), 10_000);
        stopped.code = await stack.api.stop("SIGTERM");
        paidAtStop = await paidCount();
        while (next < orders.length) await Bun.sleep(20);
      },
    );
    expect(unsent).toEqual([]);
    expect(stopped.code).toBe(0);
    expect(paidAtStop).toBeLessThan(ids.length);
    const shutdownLog = stack.api.output.slice(outputBefore);
    expect(shutdownLog).not.toContain("will be redelivered");
    expect(shutdownLog).not.toContain('"level":"error"');
    await stack.api.start();
    // O7 (v5): the stopping api left nothing with JetStream that waits for the consumer's 30 s
    // ack wait; the restarted api applies what is left at once. A few seconds on a loaded
    // machine; before the pull was drained one run in three or four waited out the ack wait.
    await eventually(
      async () => ((await paidCount()) === ids.length ? true : undefined),
      8_000,
      "every order paid within 8 s of the restart",
    );
    const paidMessages = await stack.sql<{ n: number }[]>`
      select count(*)::int as n from api.outbox
      where subject like '%orders.paid' and (payload->>'order_id')::bigint in ${stack.sql(ids)}
      group by payload->>'order_id'`;
    expect(paidMessages.length).toBe(ids.length);
    expect(paidMessages.every((row) => row.n === 1)).toBe(true);
  });
});

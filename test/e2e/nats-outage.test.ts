import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { PrivateNats } from "@commerce/testing/nats-server";
import { type Stack, startStack, succeeded } from "@commerce/testing/processes";

setDefaultTimeout(60_000);

const nats = new PrivateNats();
let stack: Stack;
beforeAll(async () => {
  await nats.start();
  stack = await startStack({ natsUrl: nats.url });
});
afterAll(async () => {
  await stack.stop();
  await nats.dispose();
});

describe("NATS outage", () => {
  test("W6: with NATS stopped, notifications are still accepted, and all are paid once it returns", async () => {
    const orders = await Promise.all(Array.from({ length: 10 }, () => stack.newOrder()));
    await nats.stop();
    const answers = [];
    for (const order of orders) answers.push(await stack.notify(succeeded(order)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    const ready = await fetch(`${stack.payments.url}/ready`);
    expect(ready.status).toBe(503);
    const [{ n }] = await stack.sql`select count(*)::int as n from payments.notifications
      where order_id in ${stack.sql(orders.map((o) => o.order_id))}`;
    expect(n).toBe(10);
    expect(await stack.orderStatus(orders[0].order_id)).toBe("created");

    await nats.start();
    for (const order of orders) await stack.paid(order.order_id, 30_000);
    for (const order of orders)
      expect(await stack.publishedOrdersPaid(order.order_id)).toHaveLength(1);
  });
});

import { expect } from "bun:test";
import { orderEventNames } from "@commerce/shared/contract/messages";
import type { ApiHarness } from "./in-process";

export type Placed = { order_id: number; amount: number; currency: string; status: string };

/**
 * What the order tests ask of an in-process api: stock and order counts, the `orders.*` events it
 * wrote for an order, and an order placed (on a product of its own, with stock when given).
 * `harness` is read at each call, so a test file can take these before its `beforeAll` starts it.
 */
export function orderKit(harness: () => ApiHarness) {
  const stockOf = async (productId: number) =>
    (await harness().sql`select stock from api.products where id = ${productId}`)[0].stock as
      | number
      | null;

  const ordersOf = async (sub: string) =>
    (await harness().sql`select count(*)::int as n from api.orders where customer_id = ${sub}`)[0]
      .n as number;

  /** The order events this harness's api wrote for one order, oldest first. */
  const eventsOf = async (orderId: number) => {
    const subjects = orderEventNames.map((event) => harness().deps.topology.orders.event(event));
    return harness().sql<
      { subject: string; message_id: string; payload: Record<string, unknown> }[]
    >`
      select subject, message_id, payload from api.outbox
      where subject = any(${subjects}) and payload->>'order_id' = ${String(orderId)} order by id`;
  };
  const eventNames = async (orderId: number) =>
    (await eventsOf(orderId)).map((e) => e.subject.split(".").pop());

  const order = (
    token: string,
    body: unknown,
  ): Promise<{ status: number; json: any; headers: Headers }> =>
    harness().call("POST", "/api/orders", { token, body });

  async function placed(stock: number | null = null, qty = 1, price = 500) {
    const product = await harness().product({ price });
    if (stock !== null)
      await harness().call("PATCH", `/api/products/${product.id}`, {
        token: await harness().admin(),
        body: { stock },
      });
    const customer = await harness().customer();
    const res = await order(customer.token, { product_id: product.id, qty });
    expect(res.status).toBe(201);
    return { product, customer, order: res.json as Placed };
  }

  // V5: an admin's move needs a note; a customer's cancel may carry one too.
  const patch = (token: string, orderId: number, status: string, note = "moved in a test") =>
    harness().call("PATCH", `/api/orders/${orderId}`, { token, body: { status, note } });

  return { stockOf, ordersOf, eventsOf, eventNames, order, placed, patch };
}

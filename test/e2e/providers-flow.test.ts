import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually } from "@commerce/testing/basics";
import {
  adyenBatch,
  adyenItem,
  checkoutSession,
  paymentIntent,
  refundedCharge,
  signedItem,
  stripeEvent,
} from "@commerce/testing/provider-requests";
import { providerStackForFile } from "@commerce/testing/provider-stack";

setDefaultTimeout(30_000);

// Stripe and Adyen through real processes: payments' routes, the outbox relay, NATS, the api.
const { stack, stripe, adyen } = await providerStackForFile();

const statusBecomes = (orderId: number, status: string) =>
  eventually(
    async () => ((await stack.orderStatus(orderId)) === status ? true : undefined),
    15_000,
    `order ${orderId} ${status}`,
  );
const processed = (orderId: number) =>
  stack.sql<{ notification_id: string; outcome: string }[]>`
    select notification_id, outcome from api.processed_notifications where order_id = ${orderId}
    order by notification_id`;
const reviews = (orderId: number) =>
  stack.sql`select reason from api.payment_reviews where order_id = ${orderId}`;
const paidEntries = (orderId: number) =>
  stack.sql<{ detail: Record<string, unknown> }[]>`
    select detail from api.order_events where order_id = ${orderId} and type = 'paid'`;

describe("Stripe end to end", () => {
  test("S3, L4, M1: a Checkout's two events about one PaymentIntent pay the order once and open no review", async () => {
    const order = await stack.newOrder(1999);
    const intentId = `pi_e2e_${order.order_id}`;
    const completed = stripeEvent(
      "checkout.session.completed",
      checkoutSession(order.order_id, intentId),
    );
    const succeeded = stripeEvent(
      "payment_intent.succeeded",
      paymentIntent(order.order_id, { id: intentId }),
    );
    expect((await stripe(completed)).status).toBe(200);
    expect((await stripe(succeeded)).status).toBe(200);
    await statusBecomes(order.order_id, "paid");
    const outcomes = await eventually(async () => {
      const rows = await processed(order.order_id);
      return rows.length === 2 ? rows : undefined;
    });
    expect(outcomes.map((row) => row.outcome).sort()).toEqual(["paid", "same_payment"]);
    expect(await reviews(order.order_id)).toHaveLength(0);
    expect(await stack.ordersPaidMessages(order.order_id)).toHaveLength(1);
    expect((await paidEntries(order.order_id))[0].detail).toEqual({
      payment_ref: intentId,
      provider: "stripe",
    });
  });

  test("S1, W8: 20 concurrent deliveries of one Stripe event move the order once", async () => {
    const order = await stack.newOrder(1999);
    const event = stripeEvent("payment_intent.succeeded", paymentIntent(order.order_id));
    const answers = await Promise.all(Array.from({ length: 20 }, () => stripe(event)));
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    await statusBecomes(order.order_id, "paid");
    await Bun.sleep(300);
    expect(await processed(order.order_id)).toHaveLength(1);
    expect(await paidEntries(order.order_id)).toHaveLength(1);
    expect(await stack.ordersPaidMessages(order.order_id)).toHaveLength(1);
  });

  test("S3: charge.refunded for the full amount refunds the paid order; a different PaymentIntent for a paid order is a duplicate_payment review", async () => {
    const order = await stack.newOrder(1999);
    const intent = paymentIntent(order.order_id);
    await stripe(stripeEvent("payment_intent.succeeded", intent));
    await statusBecomes(order.order_id, "paid");
    const second = stripeEvent("payment_intent.succeeded", paymentIntent(order.order_id));
    expect((await stripe(second)).status).toBe(200);
    await eventually(async () => ((await reviews(order.order_id)).length === 1 ? true : undefined));
    expect((await reviews(order.order_id))[0].reason).toBe("duplicate_payment");
    const refund = stripeEvent("charge.refunded", refundedCharge(order.order_id, intent.id));
    expect((await stripe(refund)).status).toBe(200);
    await statusBecomes(order.order_id, "refunded");
  });

  test("V3: the operator list filters by provider and shows payment_ref", async () => {
    const order = await stack.newOrder(1999);
    const intent = paymentIntent(order.order_id);
    await stripe(stripeEvent("payment_intent.succeeded", intent));
    const response = await fetch(
      `${stack.payments.url}/api/notifications?provider=stripe&order_id=${order.order_id}`,
      { headers: { authorization: `Bearer ${stack.admin}` } },
    );
    const page = (await response.json()) as any;
    expect(page.items).toEqual([
      expect.objectContaining({
        provider: "stripe",
        order_id: order.order_id,
        payment_ref: intent.id,
      }),
    ]);
    const generic = await fetch(
      `${stack.payments.url}/api/notifications?provider=generic&order_id=${order.order_id}`,
      { headers: { authorization: `Bearer ${stack.admin}` } },
    );
    expect(((await generic.json()) as any).total).toBe(0);
  });
});

describe("provider routes on a real server", () => {
  test("G1, N7: a Stripe event over 256 KiB is 413 problem+json from the running service; 100 KiB is accepted", async () => {
    const note = (size: number) => ({ id: "cus_big", object: "customer", note: "x".repeat(size) });
    const big = await stripe(stripeEvent("customer.updated", note(100 * 1024)));
    expect(big.status).toBe(200);
    const huge = await stripe(stripeEvent("customer.updated", note(257 * 1024)));
    expect(huge.status).toBe(413);
    expect(JSON.parse(huge.text)).toMatchObject({ status: 413 });
  });
});

describe("Adyen end to end", () => {
  test("Y2, Y3: AUTHORISATION pays the order, REFUND of the full amount refunds it", async () => {
    const order = await stack.newOrder(1999);
    const authorisation = adyenItem(order.order_id, { amount: { currency: "USD", value: 1999 } });
    const paid = await adyen(adyenBatch([signedItem(authorisation)]));
    expect(paid).toEqual({ status: 200, text: "[accepted]" });
    await statusBecomes(order.order_id, "paid");
    const refund = adyenItem(order.order_id, {
      eventCode: "REFUND",
      originalReference: authorisation.pspReference,
      amount: { currency: "USD", value: 1999 },
    });
    expect((await adyen(adyenBatch([signedItem(refund)]))).text).toBe("[accepted]");
    await statusBecomes(order.order_id, "refunded");
    expect((await paidEntries(order.order_id))[0].detail).toEqual({
      payment_ref: authorisation.pspReference,
      provider: "adyen",
    });
  });
});

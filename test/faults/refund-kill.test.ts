import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually } from "@commerce/testing/basics";
import { startStack } from "@commerce/testing/processes";
import {
  paymentIntent,
  providersEnv,
  stripeEvent,
  stripeRequest,
} from "@commerce/testing/provider-requests";
import { startStripeApi } from "@commerce/testing/providers/stripe-api";

setDefaultTimeout(90_000);

// Both services as processes; Stripe's API is the local server, reached through STRIPE_API_URL.
const stripeApi = await startStripeApi();
const stack = await startStack({
  env: { ...providersEnv, STRIPE_API_KEY: stripeApi.apiKey, STRIPE_API_URL: stripeApi.url },
});
afterAll(async () => {
  await stack.stop();
  await stripeApi.stop();
});

describe("payments killed between the provider's answer and recording it", () => {
  test("F2, F3: Stripe made the refund, payments is SIGKILLed before its answer is recorded; after a restart the same key gets the stored answer: one refund", async () => {
    const order = await stack.newOrder(1500);
    const intent = stripeApi.paymentIntent(order.amount, "usd", order.order_id);
    const event = stripeEvent(
      "payment_intent.succeeded",
      paymentIntent(order.order_id, {
        id: intent.id,
        amount: order.amount,
        amount_received: order.amount,
      }),
    );
    const built = await stripeRequest(event);
    const delivered = await fetch(`${stack.payments.url}/api/webhooks/stripe`, {
      method: "POST",
      headers: built.headers,
      body: await built.text(),
    });
    expect(delivered.status).toBe(200);
    await stack.paid(order.order_id);

    // The refund is made at Stripe, but its answer is held past the moment payments dies.
    stripeApi.fail({ kind: "timeout", ms: 5_000, made: true });
    const asked = await stack.callApi(
      "POST",
      `/api/orders/${order.order_id}/refunds`,
      stack.admin,
      {
        note: "kill test",
      },
    );
    expect(asked.status).toBe(202);
    const refundId = asked.json.refund_id as number;
    await eventually(async () => (stripeApi.refunds(intent.id).length === 1 ? true : undefined));
    await stack.payments.stop("SIGKILL");
    const [leased] = await stack.sql`
      select status, leased_until is not null as leased from payments.refunds
      where refund_id = ${refundId}`;
    expect(leased).toEqual({ status: "requested", leased: true });
    // The dead worker's lease would expire on its own (a minute); the test does not wait for it.
    await stack.sql`
      update payments.refunds set leased_until = null, next_attempt_at = now()
      where refund_id = ${refundId}`;
    await stack.payments.start();

    await eventually(
      async () => {
        const [row] = await stack.sql`select status from api.refunds where id = ${refundId}`;
        return row?.status === "succeeded" ? true : undefined;
      },
      30_000,
      `refund ${refundId} succeeded`,
    );
    expect(stripeApi.refunds(intent.id)).toHaveLength(1);
    const keys = new Set(stripeApi.refundRequests().map((r) => r.idempotencyKey));
    expect([...keys]).toEqual([`refund-${refundId}`]);
    expect(stripeApi.refundRequests().length).toBeGreaterThanOrEqual(2);
    expect(await stack.orderStatus(order.order_id)).toBe("refunded");
  });

  test("O7: a payments restart hands back refund requests it held, so a request is processed by the other replica/next start within a few seconds, not the 30 s ack wait", async () => {
    // Orders paid through the local Stripe, then refund requests streamed at the api while
    // payments is stopped (SIGTERM) and started again.
    const paidOrders: { orderId: number; intent: string }[] = [];
    for (let i = 0; i < 4; i++)
      paidOrders.push(
        ...(await Promise.all(
          Array.from({ length: 10 }, async () => {
            const order = await stack.newOrder(1200);
            const intent = stripeApi.paymentIntent(order.amount, "usd", order.order_id);
            const built = await stripeRequest(
              stripeEvent(
                "payment_intent.succeeded",
                paymentIntent(order.order_id, {
                  id: intent.id,
                  amount: order.amount,
                  amount_received: order.amount,
                }),
              ),
            );
            const answer = await fetch(`${stack.payments.url}/api/webhooks/stripe`, {
              method: "POST",
              headers: built.headers,
              body: await built.text(),
            });
            expect(answer.status).toBe(200);
            await stack.paid(order.order_id);
            return { orderId: order.order_id, intent: intent.id };
          }),
        )),
      );
    const refundIds: number[] = [];
    const recordedCount = async () => {
      if (refundIds.length === 0) return 0;
      const [row] = await stack.sql<{ n: number }[]>`
        select count(*)::int as n from payments.refunds where refund_id in ${stack.sql(refundIds)}`;
      return row.n;
    };
    const ask = async ({ orderId }: { orderId: number }) => {
      const asked = await stack.callApi("POST", `/api/orders/${orderId}/refunds`, stack.admin, {
        note: "O7 restart",
      });
      expect(asked.status).toBe(202);
      refundIds.push(asked.json.refund_id as number);
    };
    const outputBefore = stack.payments.output.length;
    // The first half while payments runs; it stops once it is recording them, and the rest are
    // asked while it stops and while it is down.
    const firstHalf = paidOrders.slice(0, 20);
    const streaming = (async () => {
      for (const order of firstHalf) {
        await ask(order);
        await Bun.sleep(25);
      }
    })();
    await eventually(async () => ((await recordedCount()) >= 3 ? true : undefined), 10_000);
    const stopping = stack.payments.stop("SIGTERM");
    await streaming;
    expect(await stopping).toBe(0);
    for (const order of paidOrders.slice(20)) await ask(order);
    const shutdownLog = stack.payments.output.slice(outputBefore);
    expect(shutdownLog).not.toContain('"level":"error"');

    await stack.payments.start();
    const restarted = Date.now();
    // O7 (v5): nothing the stopping payments held waits for the consumer's 30 s ack wait.
    await eventually(
      async () => ((await recordedCount()) === refundIds.length ? true : undefined),
      8_000,
      "every refund request recorded within 8 s of the restart",
    );
    const seconds = (Date.now() - restarted) / 1000;
    expect(seconds).toBeLessThan(8);
    await eventually(
      async () => {
        const rows = await stack.sql<{ status: string }[]>`
          select status from api.refunds where id in ${stack.sql(refundIds)}`;
        return rows.length === refundIds.length && rows.every((r) => r.status === "succeeded")
          ? true
          : undefined;
      },
      30_000,
      "every refund succeeded",
    );
    // F4: one refund at Stripe per request.
    for (const { intent } of paidOrders) expect(stripeApi.refunds(intent)).toHaveLength(1);
  });
});

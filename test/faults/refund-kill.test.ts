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
});

import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually } from "@commerce/testing/basics";
import { refundStackForFile } from "@commerce/testing/refund-stack";

setDefaultTimeout(30_000);

// REFUND_GIVE_UP_HOURS shortened to 1.5 s, so a refund without a definite answer gives up here.
const stack = await refundStackForFile({
  refunds: { giveUpAfterMs: 1500, retryMaxMs: 200, callTimeoutMs: 300 },
});

const ask = (orderId: number) =>
  stack.call("POST", `/api/orders/${orderId}/refunds`, { body: { note: "n" } });

const openReview = (orderId: number) =>
  eventually(
    async () => {
      const [review] = await stack.sql<{ reason: string; event: string; status: string }[]>`
      select reason, event, status from api.payment_reviews where order_id = ${orderId}`;
      return review;
    },
    15_000,
    `a review of order ${orderId}`,
  );

describe("no definite answer (F3)", () => {
  test("F3: a stored Stripe 500 replayed for the key until REFUND_GIVE_UP_HOURS: a refund_unknown review, and nothing is tried again", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(1000);
    stack.stripeApi.fail({ kind: "status", status: 500, stored: true });
    const asked = await ask(orderId);
    expect(await openReview(orderId)).toEqual({
      reason: "refund_unknown",
      event: "refund.unknown",
      status: "open",
    });
    const key = `refund-${asked.json.refund_id}`;
    const calls = () => stack.stripeApi.refundRequests().filter((r) => r.idempotencyKey === key);
    expect(calls().length).toBeGreaterThanOrEqual(2);
    const [row] = await stack.sql`
      select status from payments.refunds where refund_id = ${asked.json.refund_id}`;
    expect(row.status).toBe("unknown");
    const seen = calls().length;
    await Bun.sleep(800);
    expect(calls().length).toBe(seen);
    expect(stack.stripeApi.refunds(paymentRef)).toHaveLength(0);
    expect(await stack.statusOf(orderId)).toBe("paid");
    const entry = (await stack.call("GET", `/api/orders/${orderId}/events`)).json.items.find(
      (e: { type: string }) => e.type === "review_opened",
    );
    expect(entry.detail).toMatchObject({
      reason: "refund_unknown",
      refund_id: asked.json.refund_id,
    });
  });

  test("F3: an Adyen refund whose REFUND notification never arrives ends in a refund_unknown review, made once", async () => {
    const { orderId, paymentRef } = await stack.paidThroughAdyen(1200);
    stack.adyenApi.notifications = false;
    try {
      const asked = await ask(orderId);
      await stack.refundBecomes(orderId, asked.json.refund_id, "pending");
      expect((await openReview(orderId)).reason).toBe("refund_unknown");
      expect(stack.adyenApi.refunds(paymentRef)).toHaveLength(1);
      expect(
        stack.adyenApi.refundRequests().filter((r) => r.path.includes(paymentRef)),
      ).toHaveLength(1);
    } finally {
      stack.adyenApi.notifications = true;
    }
  });
});

describe("refunds seen on /metrics (F6)", () => {
  test("F6: payments counts refunds by provider and outcome, each call by what it answered, and shows the refunds still waiting for an outcome", async () => {
    const text = await (await fetch(`${stack.paymentsUrl}/metrics`)).text();
    const value = (series: string) =>
      Number(
        text
          .split("\n")
          .find((line) => line.startsWith(`${series} `))
          ?.split(" ")[1],
      );
    expect(value('refunds_total{provider="stripe",outcome="unknown"}')).toBeGreaterThanOrEqual(1);
    expect(
      value('refund_attempts_total{provider="stripe",outcome="unknown"}'),
    ).toBeGreaterThanOrEqual(2);
    expect(text).toMatch(/^refunds_awaiting_outcome \d+/m);
    expect(text).toMatch(/^refund_oldest_awaiting_outcome_seconds [\d.e+-]+/m);
  });
});

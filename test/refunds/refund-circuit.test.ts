import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually } from "@commerce/testing/basics";
import { refundStackForFile } from "@commerce/testing/refund-stack";

setDefaultTimeout(30_000);

// A circuit that opens after 2 calls without a definite answer and stays open 1.5 s.
const stack = await refundStackForFile({
  refunds: { circuitThreshold: 2, circuitCoolDownMs: 1500, retryMaxMs: 100 },
});

const ready = async () => {
  const answer = await fetch(`${stack.paymentsUrl}/ready`);
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
};

const metric = async (name: string) => {
  const text = await (await fetch(`${stack.paymentsUrl}/metrics`)).text();
  return Number(
    text
      .split("\n")
      .find((line) => line.startsWith(`${name} `))
      ?.split(" ")[1],
  );
};

describe("a provider that keeps failing (F7)", () => {
  test("F7: repeated 503s open Stripe's circuit: calls stop, /ready stays 200 and names it, the metric says so; after the cool-down the refund is made once and the circuit closes", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(1000);
    stack.stripeApi.fail({ kind: "status", status: 503 }, { kind: "status", status: 503 });
    const asked = await stack.call("POST", `/api/orders/${orderId}/refunds`, {
      body: { note: "n" },
    });
    const key = `refund-${asked.json.refund_id}`;
    const calls = () => stack.stripeApi.refundRequests().filter((r) => r.idempotencyKey === key);
    const open = await eventually(async () => {
      const answer = await ready();
      return answer.body.degraded ? answer : undefined;
    });
    expect(open.status).toBe(200);
    expect(open.body).toMatchObject({
      status: "ready",
      degraded: { stripe_api: expect.stringContaining("circuit open") },
    });
    expect(await metric("provider_circuits_open")).toBe(1);
    const held = calls().length;
    expect(held).toBe(2);
    await Bun.sleep(700);
    expect(calls().length).toBe(held);

    await stack.refundBecomes(orderId, asked.json.refund_id, "succeeded");
    expect(calls().length).toBe(3);
    expect(stack.stripeApi.refunds(paymentRef)).toHaveLength(1);
    expect((await ready()).body).toEqual({ status: "ready" });
    // A gauge's reading is reused for 5 s (N4).
    await eventually(async () =>
      (await metric("provider_circuits_open")) === 0 ? true : undefined,
    );
  });

  test("F7: every call writes a refund attempt line with the provider's request id, never the API key", async () => {
    const lines = stack.paymentsLog
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === "refund attempt");
    expect(lines.length).toBeGreaterThanOrEqual(3);
    const made = lines.find((line) => line.outcome === "succeeded");
    expect(String(made?.provider_request_id)).toStartWith("req_");
    expect(stack.paymentsLog.join("\n")).not.toContain(stack.stripeApi.apiKey);
    expect(stack.paymentsLog.join("\n")).not.toContain(stack.adyenApi.apiKey);
  });
});

describe("a provider that hangs (F7)", () => {
  test("F7: a Stripe call that hangs holds back neither an Adyen refund nor the intake; it times out and is asked again with its key: one refund", async () => {
    const stripeOrder = await stack.paidThroughStripe(1100);
    stack.stripeApi.fail({ kind: "timeout", ms: 12_000, made: true });
    const slow = await stack.call("POST", `/api/orders/${stripeOrder.orderId}/refunds`, {
      body: { note: "n" },
    });
    const key = `refund-${slow.json.refund_id}`;
    await eventually(async () =>
      stack.stripeApi.refundRequests().some((r) => r.idempotencyKey === key) ? true : undefined,
    );
    const started = performance.now();
    // While Stripe holds its answer: an order is paid through Stripe's webhook, and an Adyen
    // refund is made and confirmed.
    const adyenOrder = await stack.paidThroughAdyen(1200);
    const quick = await stack.call("POST", `/api/orders/${adyenOrder.orderId}/refunds`, {
      body: { note: "n" },
    });
    await stack.refundBecomes(adyenOrder.orderId, quick.json.refund_id, "succeeded");
    expect(performance.now() - started).toBeLessThan(5000);
    expect((await stack.refunds(stripeOrder.orderId))[0].status).toBe("requested");

    await stack.refundBecomes(stripeOrder.orderId, slow.json.refund_id, "succeeded", 25_000);
    expect(stack.stripeApi.refunds(stripeOrder.paymentRef)).toHaveLength(1);
    const calls = stack.stripeApi.refundRequests().filter((r) => r.idempotencyKey === key);
    expect(calls.length).toBeGreaterThanOrEqual(2);
  });
});

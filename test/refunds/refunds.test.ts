import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { refundStackForFile } from "@commerce/testing/refund-stack";

setDefaultTimeout(30_000);

const stack = await refundStackForFile();

describe("refunds through Stripe", () => {
  test("F1, F2: an admin's refund of a paid Stripe order is made once, with the key refund-<id>, and the order is refunded", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(1999);
    const asked = await stack.call("POST", `/api/orders/${orderId}/refunds`, {
      body: { note: "customer returned it" },
    });
    expect(asked.status).toBe(202);
    expect(asked.json).toMatchObject({ order_id: orderId, amount: 1999, status: "requested" });
    await stack.refundBecomes(orderId, asked.json.refund_id, "succeeded");
    expect(stack.stripeApi.refunds(paymentRef)).toHaveLength(1);
    const keys = stack.stripeApi.refundRequests().map((r) => r.idempotencyKey);
    expect(keys).toContain(`refund-${asked.json.refund_id}`);
    expect(await stack.statusOf(orderId)).toBe("refunded");
  });
});

import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually } from "@commerce/testing/basics";
import { refundStackForFile } from "@commerce/testing/refund-stack";

setDefaultTimeout(30_000);

// Payments takes Adyen's notifications but has no ADYEN_API_KEY: it cannot refund through Adyen.
const stack = await refundStackForFile({ env: { ADYEN_API_KEY: "" } });

describe("a provider payments does not refund through (F1)", () => {
  test("F1: an order paid through Adyen while payments has no ADYEN_API_KEY is 409 naming the variable and the PATCH; nothing recorded, nothing asked of Adyen; a Stripe payment is still 202", async () => {
    const { orderId } = await stack.paidThroughAdyen(1500);
    // Payments says which providers it refunds through once it is connected to NATS.
    const configured = await eventually(async () => {
      const providers = await stack.api.deps.refundProviders?.configured();
      return providers?.size ? providers : undefined;
    });
    expect([...configured]).toEqual(["stripe"]);
    const answer = await stack.call("POST", `/api/orders/${orderId}/refunds`, {
      body: { note: "customer returned it" },
    });
    expect(answer.status).toBe(409);
    expect(answer.json).toMatchObject({ status: 409, code: "refund_elsewhere" });
    expect(answer.json.detail).toContain("ADYEN_API_KEY");
    expect(answer.json.detail).toContain("PATCH");
    expect(await stack.refunds(orderId)).toEqual([]);
    expect(stack.adyenApi.refundRequests()).toEqual([]);

    // The order's refunds say which providers payments refunds through (the console's F5).
    const listed = await stack.call("GET", `/api/orders/${orderId}/refunds`);
    expect(listed.json).toEqual({ items: [], refunds_through: ["stripe"] });

    const stripe = await stack.paidThroughStripe(1500);
    const made = await stack.call("POST", `/api/orders/${stripe.orderId}/refunds`, {
      body: { note: "customer returned it" },
    });
    expect(made.status).toBe(202);
  });
});

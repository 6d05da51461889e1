import { describe, expect, test } from "bun:test";
import type { PaymentMessage } from "@commerce/shared/contract/messages";
import { paymentMessageFor } from "@commerce/testing/basics";
import { apiForFile } from "@commerce/testing/in-process";
import { paymentInboxKit } from "@commerce/testing/payment-inbox";
import { applyPaymentMessage } from "./apply";
import { payInOneStatement } from "./batcher";

const { api } = await apiForFile();

const { newOrder, succeeded, status, timeline, reviews } = paymentInboxKit(api);

describe("the payment reference that paid an order (M1, L4)", () => {
  test("L4, S3: a Checkout's two events about one PaymentIntent pay the order once and open no review (batch path first)", async () => {
    const order = await newOrder();
    const session = paymentMessageFor(order, { provider: "stripe", payment_ref: "pi_checkout_A" });
    const intent = paymentMessageFor(order, { provider: "stripe", payment_ref: "pi_checkout_A" });
    const paid = await payInOneStatement(api.db, api.deps.topology, [{ message: session }]);
    expect(paid.has(session.notification_id)).toBe(true);
    expect(await succeeded(intent)).toBe("same_payment");
    expect(await status(order.order_id)).toBe("paid");
    expect(await reviews(order.order_id)).toHaveLength(0);
    expect([...(await timeline(order.order_id))]).toEqual([
      expect.objectContaining({ type: "created" }),
      {
        type: "paid",
        notification_id: session.notification_id,
        detail: { payment_ref: "pi_checkout_A", provider: "stripe" },
      },
    ]);
  });

  test("L4: the same payment told twice through the general path (a replayed stream, another order of arrival) opens no review", async () => {
    const order = await newOrder();
    const first = paymentMessageFor(order, { provider: "adyen", payment_ref: "8815000000000042" });
    const again = paymentMessageFor(order, { provider: "adyen", payment_ref: "8815000000000042" });
    expect(await succeeded(first)).toBe("paid");
    expect(await succeeded(again)).toBe("same_payment");
    expect(await succeeded(again)).toBe("duplicate");
    expect(await reviews(order.order_id)).toHaveLength(0);
  });

  test("L4, T1: a different payment reference for a paid order is a duplicate_payment review, payment_ref on the timeline entry", async () => {
    const order = await newOrder();
    const first = paymentMessageFor(order, { provider: "stripe", payment_ref: "pi_first" });
    const second = paymentMessageFor(order, { provider: "stripe", payment_ref: "pi_second" });
    expect(await succeeded(first)).toBe("paid");
    expect(await succeeded(second)).toBe("duplicate_payment");
    expect(await status(order.order_id)).toBe("paid");
    expect((await reviews(order.order_id)).map((review) => review.reason)).toEqual([
      "duplicate_payment",
    ]);
    const entries = await timeline(order.order_id);
    expect(entries.find((entry) => entry.type === "paid")?.detail).toEqual({
      payment_ref: "pi_first",
      provider: "stripe",
    });
    expect(entries.find((entry) => entry.type === "review_opened")?.detail).toMatchObject({
      reason: "duplicate_payment",
      payment_ref: "pi_second",
    });
  });

  test("L4, M1: a message without payment_ref (generic, or from before M1) is its own payment: a second notification id is a duplicate_payment, as before", async () => {
    const order = await newOrder();
    expect(await succeeded(paymentMessageFor(order))).toBe("paid");
    expect(await succeeded(paymentMessageFor(order))).toBe("duplicate_payment");
  });

  test("L4, T1: a refund and a failure carry their payment_ref on the timeline", async () => {
    const order = await newOrder();
    expect(await succeeded(paymentMessageFor(order, { payment_ref: "pi_r" }))).toBe("paid");
    const failed = paymentMessageFor(order, { payment_ref: "pi_other_card" });
    expect(await applyPaymentMessage(api.db, api.deps.topology, "failed", failed)).toBe(
      "payment_failed",
    );
    const refund = paymentMessageFor(order, { payment_ref: "pi_r" });
    expect(await applyPaymentMessage(api.db, api.deps.topology, "refunded", refund)).toBe(
      "refunded",
    );
    const entries = await timeline(order.order_id);
    expect(entries.find((entry) => entry.type === "payment_failed")?.detail).toEqual({
      payment_ref: "pi_other_card",
      provider: "generic",
    });
    expect(entries.find((entry) => entry.type === "refunded")?.detail).toEqual({
      payment_ref: "pi_r",
      provider: "generic",
    });
  });

  test("L4, V2: a payment an admin applies from a review is the reference that paid; the same payment told again opens no second review", async () => {
    const order = await newOrder();
    const admin = await api.admin();
    await api.call("PATCH", `/api/orders/${order.order_id}`, {
      token: admin,
      body: { status: "cancelled", note: "customer phoned to cancel" },
    });
    const late = paymentMessageFor(order, { provider: "stripe", payment_ref: "pi_after_cancel" });
    expect(await succeeded(late)).toBe("order_not_payable");
    const [{ id }] = await api.sql<{ id: string }[]>`
      select id from api.payment_reviews where notification_id = ${late.notification_id}`;
    const applied = await api.call("POST", `/api/payment-reviews/${id}/resolve`, {
      token: admin,
      body: { action: "apply", note: "captured after cancel; keep it" },
    });
    expect(applied.status).toBe(200);
    const again = paymentMessageFor(order, { provider: "stripe", payment_ref: "pi_after_cancel" });
    expect(await succeeded(again)).toBe("same_payment");
    expect((await reviews(order.order_id)).map((review) => review.reason)).toEqual([
      "order_not_payable",
    ]);
  });

  test("L4: a provider's full refund of another payment (the second of a double charge) leaves the order paid and opens refund_not_applicable; a generic refund still refunds", async () => {
    const refunded = (message: PaymentMessage) =>
      applyPaymentMessage(api.db, api.deps.topology, "refunded", message);
    const order = await newOrder();
    expect(
      await succeeded(paymentMessageFor(order, { provider: "stripe", payment_ref: "pi_paid" })),
    ).toBe("paid");
    expect(
      await succeeded(paymentMessageFor(order, { provider: "stripe", payment_ref: "pi_twice" })),
    ).toBe("duplicate_payment");
    const wrong = paymentMessageFor(order, { provider: "stripe", payment_ref: "pi_twice" });
    expect(await refunded(wrong)).toBe("refund_not_applicable");
    expect(await status(order.order_id)).toBe("paid");
    const right = paymentMessageFor(order, { provider: "stripe", payment_ref: "pi_paid" });
    expect(await refunded(right)).toBe("refunded");
    expect(await status(order.order_id)).toBe("refunded");

    const seed = await newOrder();
    expect(await succeeded(paymentMessageFor(seed))).toBe("paid");
    expect(await refunded(paymentMessageFor(seed, { provider: "generic" }))).toBe("refunded");
  });
});

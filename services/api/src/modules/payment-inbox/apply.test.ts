import { describe, expect, test } from "bun:test";
import { type PaymentMessage, parseOrderEvent } from "@commerce/shared/contract/messages";
import { paymentMessageFor } from "@commerce/testing/basics";
import { apiForFile } from "@commerce/testing/in-process";
import { orderKit } from "@commerce/testing/orders";
import { applyPaymentMessage, type PaymentKind, paymentOutcome } from "./apply";

const { api, admin } = await apiForFile();

const { eventsOf, eventNames, placed, patch } = orderKit(() => api);

describe("payment events", () => {
  const apply = (kind: PaymentKind, m: PaymentMessage) =>
    applyPaymentMessage(api.db, api.deps.topology, kind, m);
  const reviewsOf = async (orderId: number) =>
    (
      await api.sql`select reason from api.payment_reviews where order_id = ${orderId} order by id`
    ).map((r) => r.reason);

  test("L4: the table, as a function of the event and the order", () => {
    const order = (status: "created" | "paid" | "cancelled" | "refunded") => ({
      status,
      amount: 1000,
      currency: "USD",
    });
    const same = { amount: 1000, currency: "USD" };
    expect(paymentOutcome("succeeded", order("created"), same)).toBe("paid");
    expect(paymentOutcome("succeeded", order("paid"), same)).toBe("duplicate_payment");
    expect(paymentOutcome("succeeded", order("cancelled"), same)).toBe("order_not_payable");
    expect(paymentOutcome("succeeded", order("refunded"), same)).toBe("order_not_payable");
    expect(paymentOutcome("succeeded", order("created"), { ...same, amount: 999 })).toBe(
      "mismatch",
    );
    expect(paymentOutcome("succeeded", order("created"), { ...same, currency: "EUR" })).toBe(
      "mismatch",
    );
    expect(paymentOutcome("refunded", order("paid"), same)).toBe("refunded");
    expect(paymentOutcome("refunded", order("paid"), { ...same, amount: 400 })).toBe(
      "partial_refund",
    );
    expect(paymentOutcome("refunded", order("paid"), { ...same, amount: 1001 })).toBe("mismatch");
    expect(paymentOutcome("refunded", order("created"), same)).toBe("refund_not_applicable");
    expect(paymentOutcome("failed", order("paid"), same)).toBe("payment_failed");
    for (const kind of ["succeeded", "refunded", "failed"] as const)
      expect(paymentOutcome(kind, undefined, same)).toBe("unknown_order");
  });

  test("L4, M2, M3: succeeded pays, refunded refunds, each once, with one event carrying the notification id", async () => {
    const { order: o } = await placed();
    const paid = paymentMessageFor(o);
    expect(await apply("succeeded", paid)).toBe("paid");
    expect(await apply("succeeded", paid)).toBe("duplicate");
    const refund = paymentMessageFor(o);
    expect(await apply("refunded", refund)).toBe("refunded");
    const events = await eventsOf(o.order_id);
    expect(events.map((e) => e.subject.split(".").pop())).toEqual(["created", "paid", "refunded"]);
    expect(events[1].payload).toMatchObject({
      status: "paid",
      source: "webhook",
      notification_id: paid.notification_id,
    });
    expect(events[2].payload).toMatchObject({ notification_id: refund.notification_id });
    for (const event of events) expect(parseOrderEvent(event.payload)).toBeDefined();
  });

  test("L4: a payment for a cancelled order, a second payment, refunds that do not fit and unknown orders are reviews", async () => {
    const { customer, order: cancelled } = await placed();
    await patch(customer.token, cancelled.order_id, "cancelled");
    expect(await apply("succeeded", paymentMessageFor(cancelled))).toBe("order_not_payable");
    expect(await apply("refunded", paymentMessageFor(cancelled))).toBe("refund_not_applicable");

    const { order: o } = await placed(null, 2, 500);
    await apply("succeeded", paymentMessageFor(o));
    expect(await apply("succeeded", paymentMessageFor(o))).toBe("duplicate_payment");
    expect(await apply("refunded", paymentMessageFor(o, { amount: 400 }))).toBe("partial_refund");
    expect(await apply("refunded", paymentMessageFor(o, { currency: "EUR" }))).toBe("mismatch");
    expect(await reviewsOf(o.order_id)).toEqual([
      "duplicate_payment",
      "partial_refund",
      "mismatch",
    ]);
    expect(await eventNames(o.order_id)).toEqual(["created", "paid"]);

    const ghost = { ...o, order_id: 9_000_000_000_000 + Math.floor(Math.random() * 1e12) };
    expect(await apply("failed", paymentMessageFor(ghost))).toBe("unknown_order");
    expect(await reviewsOf(ghost.order_id)).toEqual(["unknown_order"]);
  });

  test("L4, M3: payment.failed changes nothing but writes one orders.payment_failed per notification", async () => {
    const { order: o } = await placed();
    const failed = paymentMessageFor(o);
    expect(await apply("failed", failed)).toBe("payment_failed");
    expect(await apply("failed", failed)).toBe("duplicate");
    expect(await apply("failed", paymentMessageFor(o))).toBe("payment_failed");
    const events = await eventsOf(o.order_id);
    expect(events.map((e) => e.message_id)).toEqual([
      `order-created-${o.order_id}`,
      `order-payment_failed-${failed.notification_id}`,
      expect.stringMatching(/^order-payment_failed-evt/),
    ]);
    expect(events[1].payload).toMatchObject({ status: "created", source: "webhook" });
    const read = await api.call("GET", `/api/orders/${o.order_id}`, { token: admin });
    expect(read.json.status).toBe("created");
  });
});

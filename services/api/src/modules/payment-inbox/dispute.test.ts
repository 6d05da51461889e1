import { describe, expect, test } from "bun:test";
import {
  type DisputeMessage,
  type DisputeStage,
  parseOrderEvent,
} from "@commerce/shared/contract/messages";
import { paymentMessageFor, unique } from "@commerce/testing/basics";
import { apiForFile } from "@commerce/testing/in-process";
import { paymentInboxKit } from "@commerce/testing/payment-inbox";
import { applyDisputeMessage } from "./dispute";

const { api } = await apiForFile();

const { newOrder, succeeded, status, timeline, reviews } = paymentInboxKit(api);

const disputedEvents = (id: number) =>
  api.sql<{ message_id: string; payload: unknown }[]>`
    select message_id, payload from api.outbox
    where subject = ${api.deps.topology.orders.event("disputed")}
      and (payload->>'order_id')::bigint = ${id} order by id`;

/** A dispute as payments sends it: the payment named, the order only if the provider named it. */
const dispute = (
  stage: DisputeStage,
  paymentRef: string,
  extra: Partial<DisputeMessage> = {},
): DisputeMessage => ({
  notification_id: `stripe:${unique("evt")}`,
  amount: 1999,
  currency: "USD",
  received_at: new Date().toISOString(),
  provider: "stripe",
  payment_ref: paymentRef,
  stage,
  ...extra,
});
const disputed = (message: DisputeMessage) =>
  applyDisputeMessage(api.db, api.deps.topology, message);

describe("disputes and chargebacks (L5)", () => {
  test("L5, M3: a dispute opened finds the order its payment paid: dispute_opened, an orders.disputed event, a review dispute; the status stays paid", async () => {
    const order = await newOrder();
    const ref = unique("pi");
    expect(
      await succeeded(paymentMessageFor(order, { provider: "stripe", payment_ref: ref })),
    ).toBe("paid");
    const opened = dispute("opened", ref);
    expect(await disputed(opened)).toEqual({ outcome: "dispute_opened", orderId: order.order_id });
    expect(await status(order.order_id)).toBe("paid");
    const entries = await timeline(order.order_id);
    expect(entries.map((entry) => entry.type)).toEqual([
      "created",
      "paid",
      "dispute_opened",
      "review_opened",
    ]);
    expect(entries[2]).toEqual({
      type: "dispute_opened",
      notification_id: opened.notification_id,
      detail: { payment_ref: ref, provider: "stripe", stage: "opened" },
    });
    expect(entries[3].detail).toMatchObject({ reason: "dispute", stage: "opened" });
    expect(await reviews(order.order_id)).toEqual([
      { reason: "dispute", event: "payment.disputed" },
    ]);
    const [event] = await disputedEvents(order.order_id);
    expect(event.message_id).toBe(`order-disputed-${opened.notification_id}`);
    expect(parseOrderEvent(event.payload)).toBeDefined();
    expect(event.payload).toMatchObject({
      order_id: order.order_id,
      status: "paid",
      source: "webhook",
      stage: "opened",
      notification_id: opened.notification_id,
    });
  });

  test("L5: won is a timeline entry and an event without a review; lost opens one; each dispute notification applies once", async () => {
    const order = await newOrder();
    const ref = unique("pi");
    await succeeded(paymentMessageFor(order, { provider: "stripe", payment_ref: ref }));
    const won = dispute("won", ref);
    expect((await disputed(won)).outcome).toBe("dispute_won");
    expect((await disputed(won)).outcome).toBe("duplicate");
    expect(await reviews(order.order_id)).toEqual([]);
    expect((await disputed(dispute("lost", ref))).outcome).toBe("dispute_lost");
    expect((await reviews(order.order_id)).map((review) => review.reason)).toEqual(["dispute"]);
    expect((await timeline(order.order_id)).map((entry) => entry.type)).toEqual([
      "created",
      "paid",
      "dispute_won",
      "dispute_lost",
      "review_opened",
    ]);
    expect(await disputedEvents(order.order_id)).toHaveLength(2);
    expect(await status(order.order_id)).toBe("paid");
  });

  test("L5, G5: a dispute is matched to a payment of its own provider only: another provider's equal reference is not it", async () => {
    const order = await newOrder();
    const ref = unique("8815");
    await succeeded(paymentMessageFor(order, { provider: "adyen", payment_ref: ref }));
    const other = await newOrder();
    // The same reference from Stripe, naming no order and no payment Stripe made here.
    expect((await disputed(dispute("opened", ref))).outcome).toBe("no_order");
    // Adyen's chargeback names the order too; a Stripe one of the same text finds none above.
    const adyen = dispute("lost", ref, { provider: "adyen", notification_id: unique("adyen:CB") });
    expect(await disputed(adyen)).toEqual({ outcome: "dispute_lost", orderId: order.order_id });
    expect(await reviews(other.order_id)).toEqual([]);
  });

  test("L5, V2: a dispute review has no move to apply (409, it stays open); dismissing it with a note resolves it and leaves the order paid", async () => {
    const order = await newOrder();
    const ref = unique("pi");
    await succeeded(paymentMessageFor(order, { provider: "stripe", payment_ref: ref }));
    await disputed(dispute("opened", ref));
    const [{ id }] = await api.sql<{ id: string }[]>`
      select id from api.payment_reviews where order_id = ${order.order_id}`;
    const admin = await api.admin();
    const apply = await api.call("POST", `/api/payment-reviews/${id}/resolve`, {
      token: admin,
      body: { action: "apply", note: "refund it" },
    });
    expect(apply.status).toBe(409);
    const dismiss = await api.call("POST", `/api/payment-reviews/${id}/resolve`, {
      token: admin,
      body: { action: "dismiss", note: "evidence sent to Stripe" },
    });
    expect(dismiss.status).toBe(200);
    expect(dismiss.json).toMatchObject({ reason: "dispute", status: "resolved" });
    expect(await status(order.order_id)).toBe("paid");
  });

  test("L5, L4: a dispute that names an order that does not exist is a review unknown_order", async () => {
    const missing = 9_000_000_000 + Math.floor(Math.random() * 1e9);
    const message = dispute("opened", unique("pi"), { order_id: missing });
    expect((await disputed(message)).outcome).toBe("unknown_order");
    expect((await reviews(missing)).map((review) => review.reason)).toEqual(["unknown_order"]);
  });
});

describe("payment references within one provider (G5)", () => {
  test("G5: a generic payment whose reference is a Stripe PaymentIntent's id does not make that Stripe payment 'the same payment': it is a duplicate_payment review", async () => {
    const order = await newOrder();
    const ref = unique("pi");
    // The generic format's reference is its id, which the sender chooses.
    expect(
      await succeeded(paymentMessageFor(order, { notification_id: ref, payment_ref: ref })),
    ).toBe("paid");
    const stripe = paymentMessageFor(order, { provider: "stripe", payment_ref: ref });
    expect(await succeeded(stripe)).toBe("duplicate_payment");
    expect((await reviews(order.order_id)).map((review) => review.reason)).toEqual([
      "duplicate_payment",
    ]);
  });

  test("G5: a Stripe message stored before G5 and replayed after it (stripe:evt_1, applied as evt_1) is a repeat", async () => {
    const order = await newOrder();
    const bare = unique("evt");
    const before = paymentMessageFor(order, {
      notification_id: bare,
      provider: "stripe",
      payment_ref: unique("pi"),
      amount: 1,
    });
    expect(await succeeded(before)).toBe("mismatch");
    const replayed = { ...before, notification_id: `stripe:${bare}` };
    expect(await succeeded(replayed)).toBe("duplicate");
    expect(await reviews(order.order_id)).toHaveLength(1);
  });
});

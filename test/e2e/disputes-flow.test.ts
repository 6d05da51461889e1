import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { OrderEvent } from "@commerce/shared/contract/messages";
import { eventually } from "@commerce/testing/basics";
import {
  adyenBatch,
  adyenItem,
  paymentIntent,
  signedItem,
  stripeEvent,
} from "@commerce/testing/provider-requests";
import { providerStackForFile } from "@commerce/testing/provider-stack";

setDefaultTimeout(60_000);

// L5 through real processes: Stripe's and Adyen's own dispute notifications, signed by their own
// libraries, into payments, over NATS to the api, onto the order.
const { stack, stripe, adyen } = await providerStackForFile();

const timelineTypes = async (orderId: number) =>
  (await stack.callApi("GET", `/api/orders/${orderId}/events`, stack.admin)).json.items.map(
    (entry: { type: string }) => entry.type,
  ) as string[];
const timelineHas = (orderId: number, type: string) =>
  eventually(
    async () => ((await timelineTypes(orderId)).includes(type) ? true : undefined),
    20_000,
    `order ${orderId}: ${type}`,
  );
const openReviews = async (orderId: number) =>
  (
    await stack.callApi("GET", "/api/payment-reviews?status=open&per_page=100", stack.admin)
  ).json.items.filter((review: { order_id: number }) => review.order_id === orderId) as {
    reason: string;
    event: string;
  }[];
/** The orders.disputed messages JetStream holds for one order. */
const disputedMessages = async (orderId: number) =>
  (await stack.storedMessages(stack.topology.orders.stream))
    .filter((message) => message.subject === stack.topology.orders.event("disputed"))
    .map((message) => message.json<OrderEvent>())
    .filter((event) => event.order_id === orderId);
const published = (orderId: number, count: number) =>
  eventually(
    async () => {
      const found = await disputedMessages(orderId);
      return found.length >= count ? found : undefined;
    },
    20_000,
    `${count} orders.disputed of order ${orderId}`,
  );

describe("Stripe disputes end to end", () => {
  test("L5, S3, M3: charge.dispute.created names only the PaymentIntent: the order it paid gets dispute_opened, a review dispute and orders.disputed; closed lost adds dispute_lost; the order stays paid", async () => {
    const order = await stack.newOrder(1999);
    const intentId = `pi_dispute_${order.order_id}`;
    const paid = stripeEvent(
      "payment_intent.succeeded",
      paymentIntent(order.order_id, { id: intentId }),
    );
    expect((await stripe(paid)).status).toBe(200);
    await stack.paid(order.order_id);

    // A Dispute as Stripe sends it: its own metadata (empty), the Charge and the PaymentIntent.
    const disputeObject = {
      id: `dp_${order.order_id}`,
      object: "dispute",
      amount: 1999,
      balance_transactions: [],
      charge: `ch_dispute_${order.order_id}`,
      created: Math.floor(Date.now() / 1000),
      currency: "usd",
      evidence_details: { due_by: Math.floor(Date.now() / 1000) + 7 * 86400, has_evidence: false },
      is_charge_refundable: false,
      livemode: false,
      metadata: {},
      payment_intent: intentId,
      reason: "fraudulent",
      status: "needs_response",
    };
    const created = stripeEvent("charge.dispute.created", disputeObject);
    expect((await stripe(created)).status).toBe(200);
    await timelineHas(order.order_id, "dispute_opened");
    expect((await openReviews(order.order_id)).map((review) => review.reason)).toEqual(["dispute"]);
    const [opened] = await published(order.order_id, 1);
    expect(opened).toMatchObject({
      order_id: order.order_id,
      status: "paid",
      stage: "opened",
      source: "webhook",
      notification_id: `stripe:${created.id}`,
    });

    const closed = stripeEvent("charge.dispute.closed", { ...disputeObject, status: "lost" });
    expect((await stripe(closed)).status).toBe(200);
    await timelineHas(order.order_id, "dispute_lost");
    expect((await published(order.order_id, 2)).map((event) => event.stage)).toEqual([
      "opened",
      "lost",
    ]);
    expect(await stack.orderStatus(order.order_id)).toBe("paid");
    expect(await timelineTypes(order.order_id)).toEqual([
      "created",
      "paid",
      "dispute_opened",
      "review_opened",
      "dispute_lost",
      "review_opened",
    ]);
  });

  test("L5: charge.dispute.closed won is dispute_won with no review", async () => {
    const order = await stack.newOrder(1999);
    const intentId = `pi_won_${order.order_id}`;
    await stripe(
      stripeEvent("payment_intent.succeeded", paymentIntent(order.order_id, { id: intentId })),
    );
    await stack.paid(order.order_id);
    const won = stripeEvent("charge.dispute.closed", {
      id: `dp_won_${order.order_id}`,
      object: "dispute",
      amount: 1999,
      charge: `ch_won_${order.order_id}`,
      currency: "usd",
      metadata: {},
      payment_intent: intentId,
      status: "won",
    });
    expect((await stripe(won)).status).toBe(200);
    await timelineHas(order.order_id, "dispute_won");
    expect(await openReviews(order.order_id)).toEqual([]);
    expect((await published(order.order_id, 1))[0].stage).toBe("won");
  });
});

describe("Adyen chargebacks end to end", () => {
  const authorised = async () => {
    const order = await stack.newOrder(1999);
    const authorisation = adyenItem(order.order_id, { amount: { currency: "USD", value: 1999 } });
    expect((await adyen(adyenBatch([signedItem(authorisation)]))).text).toBe("[accepted]");
    await stack.paid(order.order_id);
    return { order, psp: authorisation.pspReference as string };
  };
  const chargebackItem = (orderId: number, psp: string, eventCode: string) =>
    signedItem(
      adyenItem(orderId, {
        eventCode,
        originalReference: psp,
        pspReference: `99${psp.slice(2)}`,
        amount: { currency: "USD", value: 1999 },
        reason: "Fraud",
      }),
    );

  test("L5, Y2: NOTIFICATION_OF_CHARGEBACK opens, CHARGEBACK is lost, CHARGEBACK_REVERSED won, SECOND_CHARGEBACK lost: each a timeline entry and an orders.disputed; opened and lost a review", async () => {
    const { order, psp } = await authorised();
    const stages: [string, string][] = [
      ["NOTIFICATION_OF_CHARGEBACK", "dispute_opened"],
      ["CHARGEBACK", "dispute_lost"],
      ["CHARGEBACK_REVERSED", "dispute_won"],
      ["SECOND_CHARGEBACK", "dispute_lost"],
    ];
    for (const [index, [eventCode, entry]] of stages.entries()) {
      const batch = adyenBatch([chargebackItem(order.order_id, psp, eventCode)]);
      expect((await adyen(batch)).text).toBe("[accepted]");
      // One at a time, so each stage is on the timeline in the order Adyen sent them.
      const types = await eventually(
        async () => {
          const found = (await timelineTypes(order.order_id)).filter((t) =>
            t.startsWith("dispute_"),
          );
          return found.length > index ? found : undefined;
        },
        20_000,
        `${eventCode} on order ${order.order_id}`,
      );
      expect(types[index]).toBe(entry);
    }
    expect((await published(order.order_id, 4)).map((event) => event.stage)).toEqual([
      "opened",
      "lost",
      "won",
      "lost",
    ]);
    expect((await openReviews(order.order_id)).map((review) => review.reason)).toEqual([
      "dispute",
      "dispute",
      "dispute",
    ]);
    expect(await stack.orderStatus(order.order_id)).toBe("paid");
  });

  test("L5, L4: CANCEL_OR_REFUND with success true on a paid order is a full refund", async () => {
    const { order, psp } = await authorised();
    const cancel = signedItem(
      adyenItem(order.order_id, {
        eventCode: "CANCEL_OR_REFUND",
        originalReference: psp,
        amount: { currency: "USD", value: 1999 },
      }),
    );
    expect((await adyen(adyenBatch([cancel]))).text).toBe("[accepted]");
    await eventually(
      async () => ((await stack.orderStatus(order.order_id)) === "refunded" ? true : undefined),
      20_000,
      `order ${order.order_id} refunded`,
    );
    expect(await timelineTypes(order.order_id)).toEqual(["created", "paid", "refunded"]);
  });
});

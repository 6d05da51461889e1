import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually, unique } from "@commerce/testing/basics";
import { refundedCharge, stripeEvent, stripeRequest } from "@commerce/testing/provider-requests";
import { refundStackForFile } from "@commerce/testing/refund-stack";
import { clientOf } from "../../services/api/src/lib/prepared";
import { orderRow } from "../../services/api/src/modules/orders/order-rows";
import { settleRefund } from "../../services/api/src/modules/orders/state/refunds";

setDefaultTimeout(30_000);

// The whole path in one process: api, JetStream, payments' worker, the providers' libraries and
// the local Stripe and Adyen API servers; a provider call times out after 400 ms here.
const stack = await refundStackForFile({ refunds: { callTimeoutMs: 400 } });

const ask = (orderId: number, body: Record<string, unknown>, headers = {}) =>
  stack.call("POST", `/api/orders/${orderId}/refunds`, { body, headers });

const reviewsOf = async (orderId: number) =>
  (
    await stack.sql<{ reason: string }[]>`
      select reason from api.payment_reviews where order_id = ${orderId}`
  ).map((row) => row.reason);

const timelineOf = async (orderId: number) =>
  (await stack.call("GET", `/api/orders/${orderId}/events`)).json.items as {
    type: string;
    detail: Record<string, unknown>;
    actor: string | null;
  }[];

const eventsOf = (orderId: number, event: string) =>
  stack.sql<{ message_id: string; payload: Record<string, unknown> }[]>`
    select message_id, payload from api.outbox
    where subject = ${stack.topology.orders.event(event as never)}
      and payload->>'order_id' = ${String(orderId)} order by id`;

const keysOf = (requests: { idempotencyKey: string | null }[]) => [
  ...new Set(requests.map((r) => r.idempotencyKey)),
];

describe("asking for a refund (F1)", () => {
  test("F1, N8, N9: an unpaid order, more than is left, a zero or string amount, an unknown field or reason, no note, a control character or a customer's token: 4xx, and nothing reaches a provider", async () => {
    const before = stack.stripeApi.refundRequests().length;
    const unpaid = await stack.placeOrder(1000);
    const notPaid = await ask(unpaid, { note: "n" });
    expect(notPaid.status).toBe(409);
    expect(notPaid.json.code).toBe("not_refundable");
    const { orderId } = await stack.paidThroughStripe(1000);
    const tooMuch = await ask(orderId, { amount: 1001, note: "n" });
    expect(tooMuch.status).toBe(409);
    expect(tooMuch.json.code).toBe("amount_over_left");
    expect(tooMuch.json.detail).toContain("1000 USD left");
    expect((await ask(orderId, { amount: 0, note: "n" })).status).toBe(400);
    expect((await ask(orderId, { amount: -5, note: "n" })).status).toBe(400);
    // E3, N8, N9: a string amount, an unknown reason or field, a note with a control character.
    expect((await ask(orderId, { amount: "5", note: "n" })).status).toBe(400);
    expect((await ask(orderId, { note: "n", reason: "because" })).status).toBe(400);
    expect((await ask(orderId, { note: "n", currency: "EUR" })).status).toBe(400);
    expect((await ask(orderId, { note: "bad\u0007bell" })).status).toBe(400);
    const noNote = await ask(orderId, { amount: 5 });
    expect(noNote.status).toBe(400);
    expect(JSON.stringify(noNote.json.errors)).toContain("/note");
    const byCustomer = await stack.call("POST", `/api/orders/${orderId}/refunds`, {
      token: stack.customer,
      body: { note: "mine" },
    });
    expect(byCustomer.status).toBe(403);
    expect(await stack.refunds(orderId)).toEqual([]);
    await Bun.sleep(300);
    expect(stack.stripeApi.refundRequests().length).toBe(before);
  });

  test("F1: an order paid through the generic provider is 409 saying to record a refund made elsewhere with a PATCH", async () => {
    const { orderId } = await stack.paidThroughGeneric(1200);
    const answer = await ask(orderId, { note: "n" });
    expect(answer.status).toBe(409);
    expect(answer.json.code).toBe("refund_elsewhere");
    expect(answer.json.detail).toContain("PATCH");
    expect(await stack.refunds(orderId)).toEqual([]);
  });

  test("F1, R2: the same Idempotency-Key replays the first answer and records one refund", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(1500);
    const key = { "idempotency-key": unique("key") };
    const first = await ask(orderId, { amount: 500, note: "n" }, key);
    const again = await ask(orderId, { amount: 500, note: "n" }, key);
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.json.refund_id).toBe(first.json.refund_id);
    await stack.refundBecomes(orderId, first.json.refund_id, "succeeded");
    expect(await stack.refunds(orderId)).toHaveLength(1);
    expect(stack.stripeApi.refunds(paymentRef)).toHaveLength(1);
  });

  test("F1: the owner reads the order's refunds; another customer gets 404", async () => {
    const { orderId } = await stack.paidThroughStripe(800);
    const asked = await ask(orderId, { amount: 300, note: "n", reason: "requested_by_customer" });
    const refund = await stack.refundBecomes(orderId, asked.json.refund_id, "succeeded");
    expect(refund).toMatchObject({ amount: 300, status: "succeeded" });
    const own = await stack.call("GET", `/api/orders/${orderId}/refunds`, {
      token: stack.customer,
    });
    expect(own.status).toBe(200);
    expect(own.json.items[0]).toMatchObject({
      refund_id: asked.json.refund_id,
      reason: "requested_by_customer",
      provider: "stripe",
    });
    expect(own.json.items[0].provider_refund_id).toStartWith("re_");
    const other = await stack.call("GET", `/api/orders/${orderId}/refunds`, {
      token: await (await import("@commerce/testing/basics")).signToken(unique("other")),
    });
    expect(other.status).toBe(404);
  });
});

describe("the request is durable and made once (F2)", () => {
  test("F2: the refund row and its orders.refund_requested (refund_id, amount, payment_ref, provider) are written together", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(1999);
    const asked = await ask(orderId, { amount: 700, note: "one broken" });
    const [event] = await eventsOf(orderId, "refund_requested");
    expect(event.message_id).toBe(`order-refund_requested-${asked.json.refund_id}`);
    expect(event.payload).toMatchObject({
      order_id: orderId,
      refund_id: asked.json.refund_id,
      amount: 700,
      payment_ref: paymentRef,
      provider: "stripe",
      status: "paid",
      source: "manual",
    });
    const entry = (await timelineOf(orderId)).find((e) => e.type === "refund_requested");
    expect(entry?.detail).toMatchObject({ refund_id: asked.json.refund_id, note: "one broken" });
    expect(entry?.actor).toBeString();
  });

  test("F2: Stripe's refund names the PaymentIntent and carries metadata.order_id and refund_id", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(999);
    const asked = await ask(orderId, { note: "n" });
    await stack.refundBecomes(orderId, asked.json.refund_id, "succeeded");
    const [refund] = stack.stripeApi.refunds(paymentRef);
    expect(refund.metadata).toEqual({
      order_id: String(orderId),
      refund_id: String(asked.json.refund_id),
    });
    expect(refund.amount).toBe(999);
  });

  test("F2: an orders.refund_requested delivered again (a new message id) makes no second call", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(640);
    const asked = await ask(orderId, { note: "n" });
    await stack.refundBecomes(orderId, asked.json.refund_id, "succeeded");
    const [event] = await eventsOf(orderId, "refund_requested");
    const js = stack.api.nats.jetstream();
    await js?.publish(
      stack.topology.orders.event("refund_requested"),
      new TextEncoder().encode(JSON.stringify(event.payload)),
      { msgID: unique("again") },
    );
    await Bun.sleep(800);
    const calls = stack.stripeApi
      .refundRequests()
      .filter((r) => r.idempotencyKey === `refund-${asked.json.refund_id}`);
    expect(calls).toHaveLength(1);
    expect(stack.stripeApi.refunds(paymentRef)).toHaveLength(1);
  });

  test("F2, F3: Adyen takes the refund as received; its REFUND notification confirms it, and is no second refund", async () => {
    const { orderId, paymentRef } = await stack.paidThroughAdyen(2500);
    const asked = await ask(orderId, { note: "n" });
    await stack.refundBecomes(orderId, asked.json.refund_id, "succeeded");
    const [made] = stack.adyenApi.refunds(paymentRef);
    expect(made).toMatchObject({ value: 2500, reference: String(orderId), success: true });
    const [call] = stack.adyenApi.refundRequests();
    expect(JSON.parse(call.body).merchantAccount).toBe("ShopECOM");
    expect(keysOf(stack.adyenApi.refundRequests().filter((r) => r.body === call.body))).toEqual([
      call.idempotencyKey,
    ]);
    expect(await stack.statusOf(orderId)).toBe("refunded");
    const [refund] = await stack.refunds(orderId);
    expect(refund.provider_refund_id).toBe(made.pspReference);
    expect(await reviewsOf(orderId)).toEqual([]);
    const processed = await stack.sql`
      select outcome from api.processed_notifications
      where notification_id = ${`adyen:REFUND:${made.pspReference}:true`}`;
    expect(processed[0]?.outcome).toBe("refund_confirmed");
    // Payments reads the same notification as the refund's outcome.
    await eventually(async () => {
      const [row] = await stack.sql`
        select status from payments.refunds where refund_id = ${asked.json.refund_id}`;
      return row?.status === "succeeded" ? true : undefined;
    });
  });
});

describe("outcomes (F3)", () => {
  test("F3: a Stripe 500 then success refunds once with the same key", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(1100);
    stack.stripeApi.fail({ kind: "status", status: 500 });
    const asked = await ask(orderId, { note: "n" });
    await stack.refundBecomes(orderId, asked.json.refund_id, "succeeded");
    const calls = stack.stripeApi
      .refundRequests()
      .filter((r) => r.idempotencyKey === `refund-${asked.json.refund_id}`);
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(stack.stripeApi.refunds(paymentRef)).toHaveLength(1);
    expect(await stack.statusOf(orderId)).toBe("refunded");
  });

  test("F3: Stripe made the refund but its answer timed out: asked again with the same key, Stripe replays it, one refund", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(1300);
    stack.stripeApi.fail({ kind: "timeout", ms: 1500, made: true });
    const asked = await ask(orderId, { note: "n" });
    await stack.refundBecomes(orderId, asked.json.refund_id, "succeeded");
    const calls = stack.stripeApi
      .refundRequests()
      .filter((r) => r.idempotencyKey === `refund-${asked.json.refund_id}`);
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(stack.stripeApi.refunds(paymentRef)).toHaveLength(1);
  });

  test("F3: Adyen answers 429, then 503, then resets the connection after it took the refund: the same key each time, one refund", async () => {
    const { orderId, paymentRef } = await stack.paidThroughAdyen(1400);
    stack.adyenApi.fail(
      { kind: "status", status: 429 },
      { kind: "status", status: 503 },
      { kind: "reset", made: true },
    );
    const asked = await ask(orderId, { note: "n" });
    await stack.refundBecomes(orderId, asked.json.refund_id, "succeeded");
    const calls = stack.adyenApi.refundRequests().filter((r) => r.path.includes(paymentRef));
    expect(calls.length).toBeGreaterThanOrEqual(3);
    expect(keysOf(calls)).toEqual([`refund-${asked.json.refund_id}`]);
    expect(stack.adyenApi.refunds(paymentRef)).toHaveLength(1);
  });

  test("F3: Stripe's 409 is asked again; its definite refusal fails the refund with Stripe's reason, an orders.refund_failed and a timeline entry", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(900);
    stack.stripeApi.refundElsewhere(paymentRef, 900);
    stack.stripeApi.fail({ kind: "status", status: 409 });
    const asked = await ask(orderId, { note: "n" });
    const failed = await stack.refundBecomes(orderId, asked.json.refund_id, "failed");
    expect(String(failed.failure_reason)).toContain("has already been refunded");
    expect(await stack.statusOf(orderId)).toBe("paid");
    const [event] = await eventsOf(orderId, "refund_failed");
    expect(event.payload).toMatchObject({ refund_id: asked.json.refund_id, amount: 900 });
    expect(String(event.payload.reason)).toContain("already been refunded");
    const entry = (await timelineOf(orderId)).find((e) => e.type === "refund_failed");
    expect(String(entry?.detail.reason)).toContain("already been refunded");
    // The money is free again: what failed is not counted as asked for.
    expect((await ask(orderId, { amount: 900, note: "again" })).status).toBe(202);
  });

  test("F3: Adyen's REFUND notification with success false fails the refund with Adyen's reason", async () => {
    const { orderId, paymentRef } = await stack.paidThroughAdyen(1600);
    stack.adyenApi.refundElsewhere(paymentRef, 1000);
    const asked = await ask(orderId, { note: "n" });
    const failed = await stack.refundBecomes(orderId, asked.json.refund_id, "failed");
    expect(String(failed.failure_reason)).toContain("Insufficient balance");
    expect(await stack.statusOf(orderId)).toBe("paid");
    expect(await reviewsOf(orderId)).toEqual([]);
  });

  test("F3: a Stripe refund answered pending succeeds when Stripe later says so", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(1700);
    stack.stripeApi.refundStatus = "pending";
    try {
      const asked = await ask(orderId, { note: "n" });
      await stack.refundBecomes(orderId, asked.json.refund_id, "pending");
      expect(await stack.statusOf(orderId)).toBe("paid");
      const [made] = stack.stripeApi.refunds(paymentRef);
      stack.stripeApi.settle(made.id, "succeeded");
      await stack.refundBecomes(orderId, asked.json.refund_id, "succeeded");
      expect(await stack.statusOf(orderId)).toBe("refunded");
    } finally {
      stack.stripeApi.refundStatus = "succeeded";
    }
  });

  test("F3: Stripe's charge.refunded about a refund the shop asked for confirms it: no review, no second refund", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(2000);
    const asked = await ask(orderId, { amount: 500, note: "n" });
    await stack.refundBecomes(orderId, asked.json.refund_id, "succeeded");
    const charge = refundedCharge(orderId, paymentRef, { amount: 2000, amount_refunded: 500 });
    expect(await stack.deliver(stripeRequest(stripeEvent("charge.refunded", charge)))).toBe(200);
    await eventually(async () => {
      const rows = await stack.sql`
        select outcome from api.processed_notifications
        where order_id = ${orderId} and outcome = 'refund_confirmed'`;
      return rows.length ? true : undefined;
    });
    expect(await reviewsOf(orderId)).toEqual([]);
    const [order] = await stack.sql`
      select status, refunded_amount from api.orders where id = ${orderId}`;
    expect(order).toMatchObject({ status: "paid", refunded_amount: "500" });
  });
});

describe("money invariants (F4)", () => {
  test("F4: partial refunds keep the order paid with refunded_amount and an orders.refunded each; the one reaching the amount refunds it; no partial_refund review", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(1000);
    const first = await ask(orderId, { amount: 300, note: "n" });
    await stack.refundBecomes(orderId, first.json.refund_id, "succeeded");
    let order = (await stack.call("GET", `/api/orders/${orderId}`)).json;
    expect(order).toMatchObject({ status: "paid", refunded_amount: 300 });
    const rest = await ask(orderId, { note: "the rest" });
    expect(rest.json.amount).toBe(700);
    await stack.refundBecomes(orderId, rest.json.refund_id, "succeeded");
    order = (await stack.call("GET", `/api/orders/${orderId}`)).json;
    expect(order).toMatchObject({ status: "refunded", refunded_amount: 1000 });
    const refunded = await eventsOf(orderId, "refunded");
    expect(
      refunded.map((e) => [e.payload.status, e.payload.amount, e.payload.refunded_amount]),
    ).toEqual([
      ["paid", 300, 300],
      ["refunded", 700, 1000],
    ]);
    expect(await reviewsOf(orderId)).toEqual([]);
    expect(stack.stripeApi.refunds(paymentRef).reduce((sum, r) => sum + r.amount, 0)).toBe(1000);
    expect((await ask(orderId, { amount: 1, note: "n" })).json.code).toBe("not_refundable");
  });

  test("F4: 20 concurrent refund requests never ask for more than was paid, here or at Stripe", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(2000);
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => ask(orderId, { amount: 300, note: "n" })),
    );
    const accepted = answers.filter((a) => a.status === 202);
    expect(accepted).toHaveLength(6);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(14);
    for (const a of accepted) await stack.refundBecomes(orderId, a.json.refund_id, "succeeded");
    const atStripe = stack.stripeApi.refunds(paymentRef).reduce((sum, r) => sum + r.amount, 0);
    expect(atStripe).toBe(1800);
    const [order] = await stack.sql`select refunded_amount from api.orders where id = ${orderId}`;
    expect(Number(order.refunded_amount)).toBe(1800);
  });

  test("F4, M4: 20 concurrent refund requests spread over two api replicas never ask for more than was paid", async () => {
    const replica = await stack.apiReplica();
    try {
      const { orderId, paymentRef } = await stack.paidThroughStripe(2000);
      const answers = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const base = i % 2 ? replica.url : stack.apiUrl;
          const response = await fetch(`${base}/api/orders/${orderId}/refunds`, {
            method: "POST",
            headers: { authorization: `Bearer ${stack.admin}`, "content-type": "application/json" },
            body: JSON.stringify({ amount: 700, note: "n" }),
          });
          return {
            status: response.status,
            json: (await response.json()) as { refund_id: number },
          };
        }),
      );
      const accepted = answers.filter((a) => a.status === 202);
      expect(accepted).toHaveLength(2);
      expect(answers.filter((a) => a.status === 409)).toHaveLength(18);
      for (const a of accepted) await stack.refundBecomes(orderId, a.json.refund_id, "succeeded");
      expect(stack.stripeApi.refunds(paymentRef).reduce((sum, r) => sum + r.amount, 0)).toBe(1400);
    } finally {
      await replica.stop();
    }
  });

  test("F4, M3: two refunds of one order settled by transactions that wait for each other's order lock: the one committed later has the later `at`, on its orders.refunded and its timeline entry", async () => {
    // Found by the chaos run: a refund outcome's transaction began (and took its time) before
    // another one's, waited for the order's lock, and committed second, announcing an `at` earlier
    // than the event delivered before it. The time is now taken once the order is locked.
    const { orderId } = await stack.paidThroughStripe(3000);
    const db = stack.api.deps.db;
    const cause = (id: number) => ({
      source: "webhook" as const,
      notificationId: `refund-${id}-succeeded`,
      actor: "chaos",
      paymentRef: "pi_test",
      provider: "stripe",
      refund: { id, amount: 1000 },
    });
    let otherCommitted = () => {};
    const committed = new Promise<void>((resolve) => {
      otherCommitted = resolve;
    });
    const early = db.transaction(async (tx) => {
      await clientOf(tx)`select 1`;
      await committed;
      await orderRow(tx, orderId, { lock: true });
      await settleRefund(tx, stack.topology, orderId, cause(900_001));
    });
    await Bun.sleep(50);
    await db.transaction(async (tx) => {
      await orderRow(tx, orderId, { lock: true });
      await settleRefund(tx, stack.topology, orderId, cause(900_002));
    });
    otherCommitted();
    await early;
    const events = await eventsOf(orderId, "refunded");
    expect(events.map((e) => e.payload.refund_id)).toEqual([900_002, 900_001]);
    expect(String(events[0].payload.at) <= String(events[1].payload.at)).toBe(true);
    const entries = await stack.sql<{ at: number }[]>`
      select extract(epoch from at)::float8 as at from api.order_events
      where order_id = ${orderId} and type = 'refunded' order by id`;
    expect(entries).toHaveLength(2);
    expect(entries[0].at).toBeLessThanOrEqual(entries[1].at);
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type PaymentsHarness, problemType, startPayments } from "@commerce/testing/in-process";
import { nowSeconds, uniqueOrderId } from "@commerce/testing/payments-requests";
import {
  checkoutSession,
  otherStripeSecret,
  paymentIntent,
  providersEnv,
  refundedCharge,
  stripeBody,
  stripeEvent,
  stripeRequest,
  stripeSecret,
  stripeUrl,
} from "@commerce/testing/provider-requests";

let payments: PaymentsHarness;
beforeAll(async () => {
  payments = await startPayments({
    env: { ...providersEnv, STRIPE_WEBHOOK_SECRETS: `whsec_retired_secret_0001,${stripeSecret}` },
  });
});
afterAll(() => payments.close());

const send = async (request: Request | Promise<Request>) => {
  const response = await payments.app().handle(await request);
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: tryJson(text) };
};
const tryJson = (text: string) => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

const stored = (id: string) =>
  payments.sql<
    {
      provider: string;
      event: string;
      order_id: string | null;
      payment_ref: string | null;
      amount: string | null;
      currency: string | null;
      raw_body: string;
    }[]
  >`select provider, event, order_id, payment_ref, amount, currency, raw_body
    from payments.notifications where id = ${id}`;
const messages = (id: string) =>
  payments.sql<{ subject: string; payload: any }[]>`
    select subject, payload from payments.outbox
    where payload->>'notification_id' = ${`stripe:${id}`}`;

describe("Stripe: authentication", () => {
  test("S1, G1: an event signed by Stripe's own library, pretty-printed, application/json; charset=utf-8, is accepted and stored as sent", async () => {
    const orderId = uniqueOrderId();
    const event = stripeEvent("payment_intent.succeeded", paymentIntent(orderId));
    const answer = await send(stripeRequest(event));
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ received: true });
    const [row] = await stored(event.id);
    expect(row.provider).toBe("stripe");
    expect(row.raw_body).toBe(stripeBody(event));
    expect(row.raw_body).toContain('\n  "api_version"');
  });

  test("S1: any secret of STRIPE_WEBHOOK_SECRETS may match (rotation)", async () => {
    const event = stripeEvent("customer.created", { id: "cus_1", object: "customer" });
    const answer = await send(stripeRequest(event, { secret: "whsec_retired_secret_0001" }));
    expect(answer.status).toBe(200);
  });

  test("S1, G3: forged, stale, future, re-signed with another secret, tampered and unsigned events are 401 problem+json and store nothing", async () => {
    const event = stripeEvent("payment_intent.succeeded", paymentIntent(uniqueOrderId()));
    const body = stripeBody(event);
    const tampered = body.replace('"amount_received": 1999', '"amount_received": 1');
    const requests = [
      stripeRequest(event, { signature: `t=${nowSeconds()},v1=${"ab".repeat(32)}` }),
      stripeRequest(event, { timestamp: nowSeconds() - 400 }),
      stripeRequest(event, { timestamp: nowSeconds() + 400 }),
      stripeRequest(event, { secret: otherStripeSecret }),
      stripeRequest(tampered, {
        signature: await (await stripeRequest(body)).headers.get("stripe-signature"),
      }),
      stripeRequest(event, { signature: null }),
      stripeRequest(event, { signature: "garbage" }),
    ];
    for (const request of requests) {
      const answer = await send(request);
      expect(answer.status).toBe(401);
      expect(answer.headers.get("content-type")).toBe(problemType);
      expect(answer.json.detail).toContain("Stripe-Signature");
    }
    expect(await stored(event.id)).toHaveLength(0);
    expect(await messages(event.id)).toHaveLength(0);
  });

  test("G1: the route reads an X-Signature signed body as forged: only Stripe-Signature counts", async () => {
    const event = stripeEvent("payment_intent.succeeded", paymentIntent(uniqueOrderId()));
    const request = await stripeRequest(event);
    const headers = new Headers(request.headers);
    headers.set("x-signature", headers.get("stripe-signature") ?? "");
    headers.delete("stripe-signature");
    const answer = await send(
      new Request(stripeUrl, { method: "POST", headers, body: stripeBody(event) }),
    );
    expect(answer.status).toBe(401);
  });
});

describe("Stripe: events as notifications", () => {
  test("S2, S3, M1: payment_intent.succeeded: id evt_..., event the type, order from metadata.order_id, amount_received, currency upper-case, the PaymentIntent as payment_ref", async () => {
    const orderId = uniqueOrderId();
    const intent = paymentIntent(orderId, { amount: 2500, amount_received: 2500, currency: "eur" });
    const event = stripeEvent("payment_intent.succeeded", intent);
    expect((await send(stripeRequest(event))).status).toBe(200);
    expect([...(await stored(event.id))]).toEqual([
      expect.objectContaining({
        provider: "stripe",
        event: "payment_intent.succeeded",
        order_id: String(orderId),
        payment_ref: intent.id,
        amount: "2500",
        currency: "EUR",
      }),
    ]);
    const [message] = await messages(event.id);
    expect(message.subject).toBe(payments.topology.payments.orderPaid);
    expect(message.payload).toMatchObject({
      // G5: the message names the notification by its provider and id.
      notification_id: `stripe:${event.id}`,
      order_id: orderId,
      amount: 2500,
      currency: "EUR",
      provider: "stripe",
      payment_ref: intent.id,
    });
  });

  test("S3: checkout.session.completed (paid) names the order by client_reference_id and the PaymentIntent by payment_intent; unpaid makes no message until async_payment_succeeded", async () => {
    const orderId = uniqueOrderId();
    const paid = stripeEvent(
      "checkout.session.completed",
      checkoutSession(orderId, "pi_checkout_1"),
    );
    expect((await send(stripeRequest(paid))).status).toBe(200);
    const [message] = await messages(paid.id);
    expect(message.subject).toBe(payments.topology.payments.orderPaid);
    expect(message.payload).toMatchObject({
      order_id: orderId,
      amount: 1999,
      payment_ref: "pi_checkout_1",
    });

    const session = checkoutSession(orderId, "pi_checkout_2", { payment_status: "unpaid" });
    const unpaid = stripeEvent("checkout.session.completed", session);
    expect((await send(stripeRequest(unpaid))).status).toBe(200);
    expect(await stored(unpaid.id)).toHaveLength(1);
    expect(await messages(unpaid.id)).toHaveLength(0);
    const later = stripeEvent("checkout.session.async_payment_succeeded", {
      ...session,
      payment_status: "paid",
    });
    expect((await send(stripeRequest(later))).status).toBe(200);
    expect((await messages(later.id))[0].payload).toMatchObject({
      order_id: orderId,
      payment_ref: "pi_checkout_2",
    });
  });

  test("S3: payment_intent.payment_failed and checkout.session.async_payment_failed make failed messages", async () => {
    const orderId = uniqueOrderId();
    const failed = stripeEvent(
      "payment_intent.payment_failed",
      paymentIntent(orderId, { amount_received: 0, status: "requires_payment_method" }),
    );
    const asyncFailed = stripeEvent(
      "checkout.session.async_payment_failed",
      checkoutSession(orderId, "pi_async_failed", { payment_status: "unpaid" }),
    );
    for (const event of [failed, asyncFailed]) {
      expect((await send(stripeRequest(event))).status).toBe(200);
      const [message] = await messages(event.id);
      expect(message.subject).toBe(payments.topology.payments.orderFailed);
      expect(message.payload).toMatchObject({ order_id: orderId, amount: 1999, currency: "USD" });
    }
  });

  test("S3: charge.refunded makes a refunded message of amount_refunded, about the charge's PaymentIntent", async () => {
    const orderId = uniqueOrderId();
    const event = stripeEvent(
      "charge.refunded",
      refundedCharge(orderId, "pi_refunded_1", { amount_refunded: 500, refunded: false }),
    );
    expect((await send(stripeRequest(event))).status).toBe(200);
    const [message] = await messages(event.id);
    expect(message.subject).toBe(payments.topology.payments.orderRefunded);
    expect(message.payload).toMatchObject({
      order_id: orderId,
      amount: 500,
      payment_ref: "pi_refunded_1",
    });
  });

  test("G2: every other Stripe event is stored and answered 200 without a message", async () => {
    for (const event of [
      stripeEvent("customer.created", { id: "cus_9", object: "customer", metadata: {} }),
      stripeEvent("charge.dispute.funds_withdrawn", {
        id: "dp_1",
        object: "dispute",
        amount: 1999,
        currency: "usd",
        payment_intent: "pi_x",
      }),
      stripeEvent(
        "payment_intent.created",
        paymentIntent(uniqueOrderId(), { status: "requires_payment_method" }),
      ),
    ]) {
      const answer = await send(stripeRequest(event));
      expect(answer.status).toBe(200);
      expect(await stored(event.id)).toHaveLength(1);
      expect(await messages(event.id)).toHaveLength(0);
    }
  });

  test("G2: an order reference that is not a positive integer (or none) is stored with order_id null, answered 200, and makes no message", async () => {
    for (const reference of ["ORD-42", "0", "-5", "1.5", "99999999999999999999", null]) {
      const event = stripeEvent("payment_intent.succeeded", paymentIntent(reference));
      const answer = await send(stripeRequest(event));
      expect({ reference, status: answer.status }).toEqual({ reference, status: 200 });
      const [row] = await stored(event.id);
      expect(row.order_id).toBeNull();
      expect(await messages(event.id)).toHaveLength(0);
    }
  });

  test("G3, W8: a repeated event answers 200 duplicate; 20 concurrent deliveries store one notification and one message", async () => {
    const event = stripeEvent("payment_intent.succeeded", paymentIntent(uniqueOrderId()));
    const requests = await Promise.all(Array.from({ length: 20 }, () => stripeRequest(event)));
    const answers = await Promise.all(requests.map((request) => send(request)));
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    expect(answers.filter((answer) => answer.json.duplicate === true)).toHaveLength(19);
    expect(await stored(event.id)).toHaveLength(1);
    expect(await messages(event.id)).toHaveLength(1);
  });
});

describe("Stripe: bad input", () => {
  test("G1: unparseable JSON, a body that is not a Stripe event, and an amount that is not an integer are 400 problem+json and store nothing", async () => {
    const orderId = uniqueOrderId();
    const notAnEvent = { id: "evt_no_data_1", object: "event", type: "payment_intent.succeeded" };
    const fractional = stripeEvent(
      "payment_intent.succeeded",
      paymentIntent(orderId, { amount_received: 19.99 }),
    );
    const textAmount = stripeEvent(
      "charge.refunded",
      refundedCharge(orderId, "pi_1", { amount_refunded: "1999" }),
    );
    const cases: [string, string][] = [
      ['{"id": "evt_broken", "type": ', ""],
      [stripeBody(notAnEvent), "/data/object"],
      [stripeBody(fractional), "/data/object/amount_received"],
      [stripeBody(textAmount), "/data/object/amount_refunded"],
      ["[]", ""],
    ];
    for (const [body, path] of cases) {
      const answer = await send(stripeRequest(body));
      expect({ body: body.slice(0, 30), status: answer.status }).toEqual({
        body: body.slice(0, 30),
        status: 400,
      });
      expect(answer.headers.get("content-type")).toBe(problemType);
      if (path) expect(answer.json.errors.map((error: any) => error.path)).toContain(path);
    }
    for (const id of ["evt_no_data_1", fractional.id, textAmount.id])
      expect(await stored(id)).toHaveLength(0);
  });

  test("S3, M1: a payment_intent that is no Stripe id (a NUL, 300 characters) is never a payment_ref: the charge's own id is, and nothing fails", async () => {
    for (const weird of ["pi_\u0000x", `pi_${"x".repeat(300)}`]) {
      const charge = refundedCharge(uniqueOrderId(), weird);
      const event = stripeEvent("charge.refunded", charge);
      expect((await send(stripeRequest(event))).status).toBe(200);
      expect((await stored(event.id))[0].payment_ref).toBe(charge.id);
    }
  });

  test("G1: a body over 256 KiB is 413; one over 64 KiB (the generic limit) is accepted", async () => {
    const big = stripeEvent("customer.updated", {
      id: "cus_big",
      object: "customer",
      note: "x".repeat(100 * 1024),
    });
    expect((await send(stripeRequest(big))).status).toBe(200);
    const huge = stripeEvent("customer.updated", {
      id: "cus_huge",
      object: "customer",
      note: "x".repeat(257 * 1024),
    });
    const answer = await send(stripeRequest(huge));
    expect(answer.status).toBe(413);
    expect(await stored(huge.id)).toHaveLength(0);
  });

  test("G1: a body that is not application/json is 415", async () => {
    const event = stripeEvent("payment_intent.succeeded", paymentIntent(uniqueOrderId()));
    expect((await send(stripeRequest(event, { contentType: "text/plain" }))).status).toBe(415);
  });
});

describe("Stripe: unconfigured", () => {
  test("G1: without STRIPE_WEBHOOK_SECRETS the service starts and the Stripe route answers 404", async () => {
    const plain = await startPayments();
    try {
      const event = stripeEvent("payment_intent.succeeded", paymentIntent(uniqueOrderId()));
      const response = await plain.app().handle(await stripeRequest(event));
      expect(response.status).toBe(404);
      expect(await stored(event.id)).toHaveLength(0);
    } finally {
      await plain.close();
    }
  });
});

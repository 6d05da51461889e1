import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually, unique } from "@commerce/testing/basics";
import { uniqueOrderId } from "@commerce/testing/payments-requests";
import {
  adyenBatch,
  adyenItem,
  paymentIntent,
  signedItem,
  stripeEvent,
} from "@commerce/testing/provider-requests";
import { providerStackForFile } from "@commerce/testing/provider-stack";

setDefaultTimeout(60_000);

// G2, G4, G5 against listening processes: the requests are Stripe's and Adyen's own, signed by
// their own libraries.
const { stack, stripe, adyen } = await providerStackForFile();
// G4: a payments replica of a shop that takes live money.
const live = await stack.replica("payments", { PAYMENT_MODE: "live" });

const stored = (provider: string, id: string) =>
  stack.sql<{ key: string; event: string; ignored: string | null }[]>`
    select key, event, ignored from payments.notifications where provider = ${provider} and id = ${id}`;
const messagesOf = (key: string) =>
  stack.sql`select subject from payments.outbox where payload->>'notification_id' = ${key}`;
const listed = async (key: string) => {
  const answer = await fetch(`${stack.payments.url}/api/notifications/${encodeURIComponent(key)}`, {
    headers: { authorization: `Bearer ${stack.admin}` },
  });
  return { status: answer.status, json: (await answer.json()) as Record<string, unknown> };
};

/** Every name Object.prototype has: a plain-object lookup finds each of them. */
const prototypeNames = Object.getOwnPropertyNames(Object.prototype);

describe("any event type (G2)", () => {
  test("G2: a signed Stripe event typed as any Object.prototype name (constructor, __proto__, toString ...) is stored and answered 200 without a message", async () => {
    expect(prototypeNames).toContain("__proto__");
    for (const type of prototypeNames) {
      const event = stripeEvent(type, paymentIntent(uniqueOrderId()));
      const answer = await stripe(event);
      expect({ type, status: answer.status }).toEqual({ type, status: 200 });
      const [row] = await stored("stripe", event.id);
      expect(row.event).toBe(type);
      expect(await messagesOf(row.key)).toHaveLength(0);
    }
  });

  test("G2: an Adyen item whose eventCode is any Object.prototype name is accepted and stored without a message", async () => {
    for (const eventCode of prototypeNames) {
      const item = adyenItem(uniqueOrderId(), { eventCode });
      const answer = await adyen(adyenBatch([signedItem(item)]));
      expect({ eventCode, status: answer.status, text: answer.text }).toEqual({
        eventCode,
        status: 200,
        text: "[accepted]",
      });
      const [row] = await stored("adyen", `adyen:${eventCode}:${item.pspReference}:true`);
      expect(await messagesOf(row.key)).toHaveLength(0);
    }
  });

  test("G2: a generic notification whose event is any Object.prototype name is stored without a message", async () => {
    for (const event of prototypeNames) {
      const id = unique("proto");
      const answer = await stack.notify({
        event,
        order_id: uniqueOrderId(),
        amount: 1,
        currency: "USD",
        id,
      });
      expect({ event, status: answer.status }).toEqual({ event, status: 200 });
      expect(await stored("generic", id)).toHaveLength(1);
      expect(await messagesOf(id)).toHaveLength(0);
    }
  });
});

describe("the shop's own money (G4)", () => {
  test("G4: under PAYMENT_MODE test, a Stripe event with livemode true is stored and answered 200 without a message; V3 and the log line say why", async () => {
    const event = stripeEvent("payment_intent.succeeded", paymentIntent(uniqueOrderId()), {
      livemode: true,
    });
    expect((await stripe(event)).status).toBe(200);
    const [row] = await stored("stripe", event.id);
    expect(row.ignored).toBe("livemode is true; PAYMENT_MODE is test");
    expect(await messagesOf(row.key)).toHaveLength(0);
    const shown = await listed(row.key);
    expect(shown.json).toMatchObject({ ignored: "livemode is true; PAYMENT_MODE is test" });
    await eventually(
      async () =>
        stack.payments.output.includes(`"notification_id":"${row.key}"`) &&
        stack.payments.output.includes('"ignored":"livemode is true; PAYMENT_MODE is test"')
          ? true
          : undefined,
      10_000,
      "the ignored log line",
    );
  });

  test("G4: under PAYMENT_MODE live, livemode false is ignored and livemode true moves money", async () => {
    const test = stripeEvent("payment_intent.succeeded", paymentIntent(uniqueOrderId()));
    const real = stripeEvent("payment_intent.succeeded", paymentIntent(uniqueOrderId()), {
      livemode: true,
    });
    expect((await stripe(test, live)).status).toBe(200);
    expect((await stripe(real, live)).status).toBe(200);
    const [ignored] = await stored("stripe", test.id);
    expect(ignored.ignored).toBe("livemode is false; PAYMENT_MODE is live");
    expect(await messagesOf(ignored.key)).toHaveLength(0);
    const [moved] = await stored("stripe", real.id);
    expect(moved.ignored).toBeNull();
    expect(await messagesOf(moved.key)).toHaveLength(1);
  });

  test("G4: an Adyen batch whose live is not PAYMENT_MODE's, and an item of a merchant account not in ADYEN_MERCHANT_ACCOUNTS, are [accepted] and stored without a message", async () => {
    const liveItem = adyenItem(uniqueOrderId());
    const liveBatch = adyenBatch([signedItem(liveItem)], "true");
    expect((await adyen(liveBatch)).text).toBe("[accepted]");
    const own = adyenItem(uniqueOrderId());
    const foreign = adyenItem(uniqueOrderId(), { merchantAccountCode: "SomeoneElseECOM" });
    const mixed = adyenBatch([signedItem(own), signedItem(foreign)]);
    expect((await adyen(mixed)).text).toBe("[accepted]");

    const id = (item: Record<string, unknown>) => `adyen:AUTHORISATION:${item.pspReference}:true`;
    const [fromLive] = await stored("adyen", id(liveItem));
    expect(fromLive.ignored).toBe('live is "true"; PAYMENT_MODE is test');
    expect(await messagesOf(fromLive.key)).toHaveLength(0);
    const [fromOther] = await stored("adyen", id(foreign));
    expect(fromOther.ignored).toBe(
      'merchantAccountCode "SomeoneElseECOM" is not in ADYEN_MERCHANT_ACCOUNTS',
    );
    expect(await messagesOf(fromOther.key)).toHaveLength(0);
    const [fromOwn] = await stored("adyen", id(own));
    expect(fromOwn.ignored).toBeNull();
    expect(await messagesOf(fromOwn.key)).toHaveLength(1);
  });
});

describe("notifications identified by provider and id (G5)", () => {
  test("G5: a generic notification that takes a Stripe event's id first does not stop that Stripe event: both are stored and both orders are paid", async () => {
    const first = await stack.newOrder(1999);
    const second = await stack.newOrder(1999);
    const event = stripeEvent(
      "payment_intent.succeeded",
      paymentIntent(second.order_id, { currency: "usd", amount_received: 1999 }),
    );
    // The generic sender uses the Stripe event's id (it saw it, or guessed it) for its own payment.
    const generic = await stack.notify({
      event: "payment.succeeded",
      order_id: first.order_id,
      amount: 1999,
      currency: "USD",
      id: event.id,
    });
    expect(generic.json).toEqual({ received: true });
    const answer = await stripe(event);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toEqual({ received: true });
    await stack.paid(first.order_id, 20_000);
    await stack.paid(second.order_id, 20_000);
    const keys = await stack.sql<{ key: string; provider: string }[]>`
      select key, provider from payments.notifications where id = ${event.id} order by provider`;
    expect([...keys]).toEqual([
      { key: event.id, provider: "generic" },
      { key: `stripe:${event.id}`, provider: "stripe" },
    ]);
    // V3 finds each: the key names one, the bare id the generic one (its key).
    expect((await listed(`stripe:${event.id}`)).json).toMatchObject({ provider: "stripe" });
    expect((await listed(event.id)).json).toMatchObject({ provider: "generic" });
  });

  test("G5: a generic id that starts with a provider's prefix (stripe:evt_...) cannot take that provider's key", async () => {
    const order = await stack.newOrder(1999);
    const event = stripeEvent("payment_intent.succeeded", paymentIntent(order.order_id));
    const generic = await stack.notify({
      event: "payment.failed",
      order_id: order.order_id,
      amount: 1999,
      currency: "USD",
      id: `stripe:${event.id}`,
    });
    expect(generic.status).toBe(200);
    expect(JSON.parse((await stripe(event)).text)).toEqual({ received: true });
    await stack.paid(order.order_id, 20_000);
    const [row] = await stored("generic", `stripe:${event.id}`);
    expect(row.key).toBe(`generic:stripe:${event.id}`);
  });
});

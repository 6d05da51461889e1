import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { token, unique } from "@commerce/testing/basics";
import { type PaymentsHarness, startPayments } from "@commerce/testing/in-process";
import {
  notificationRequest,
  paymentSucceeded,
  uniqueOrderId,
} from "@commerce/testing/payments-requests";
import {
  adyenBatch,
  adyenItem,
  adyenRequest,
  paymentIntent,
  providersEnv,
  signedItem,
  stripeEvent,
  stripeRequest,
} from "@commerce/testing/provider-requests";

let payments: PaymentsHarness;
let admin: string;
beforeAll(async () => {
  payments = await startPayments({ env: providersEnv });
  admin = await token({ sub: unique("op"), scope: "admin" });
});
afterAll(() => payments.close());

const list = async (query: string) => {
  const response = await payments.app().handle(
    new Request(`http://localhost/api/notifications?${query}`, {
      headers: { authorization: `Bearer ${admin}` },
    }),
  );
  return { status: response.status, json: (await response.json()) as any };
};

describe("operator routes: providers (V3)", () => {
  test("V3: the list filters by provider, shows payment_ref, and order_id null for what names no order", async () => {
    const orderId = uniqueOrderId();
    const genericId = unique("evt");
    await payments.app().handle(notificationRequest(paymentSucceeded(orderId, { id: genericId })));
    const intent = paymentIntent(orderId);
    const stripe = stripeEvent("payment_intent.succeeded", intent);
    await payments.app().handle(await stripeRequest(stripe));
    const item = adyenItem(orderId);
    await payments.app().handle(adyenRequest(adyenBatch([signedItem(item)])));
    const orphan = stripeEvent("payment_intent.succeeded", paymentIntent("not-an-order"));
    await payments.app().handle(await stripeRequest(orphan));

    const byProvider = async (provider: string) =>
      (await list(`provider=${provider}&order_id=${orderId}`)).json.items;
    expect(await byProvider("generic")).toEqual([
      expect.objectContaining({ id: genericId, provider: "generic", payment_ref: genericId }),
    ]);
    expect(await byProvider("stripe")).toEqual([
      expect.objectContaining({
        id: stripe.id,
        provider: "stripe",
        payment_ref: intent.id,
        currency: "USD",
      }),
    ]);
    expect(await byProvider("adyen")).toEqual([
      expect.objectContaining({
        provider: "adyen",
        event: "AUTHORISATION",
        payment_ref: item.pspReference,
      }),
    ]);
    const stripes = await list("provider=stripe&per_page=100");
    expect(stripes.json.items).toContainEqual(
      expect.objectContaining({
        id: orphan.id,
        order_id: null,
        payment_ref: orphan.data.object.id,
      }),
    );
  });

  test("V3: an unknown provider is 400 naming the parameter", async () => {
    const answer = await list("provider=paypal");
    expect(answer.status).toBe(400);
    expect(answer.json.errors.map((error: any) => error.path)).toContain("/provider");
  });

  test("V3: a Stripe notification's message replays to the subject it first went to", async () => {
    const stripe = stripeEvent("payment_intent.succeeded", paymentIntent(uniqueOrderId()));
    await payments.app().handle(await stripeRequest(stripe));
    const response = await payments.app().handle(
      new Request(`http://localhost/api/notifications/${stripe.id}/replay`, {
        method: "POST",
        headers: { authorization: `Bearer ${admin}` },
      }),
    );
    expect(response.status).toBe(202);
    expect(((await response.json()) as any).subject).toBe(payments.topology.payments.orderPaid);
  });

  test("G1, O4: /swagger/json documents the Stripe and Adyen routes, each with its own credential", async () => {
    const response = await payments.app().handle(new Request("http://localhost/swagger/json"));
    const doc = (await response.json()) as any;
    const stripe = doc.paths["/api/webhooks/stripe"].post;
    const adyen = doc.paths["/api/webhooks/adyen"].post;
    expect(stripe.security).toEqual([{ stripeSignature: [] }]);
    expect(adyen.security).toEqual([{ adyenHmac: [] }]);
    expect(Object.keys(stripe.responses)).toEqual(
      expect.arrayContaining(["200", "400", "401", "413", "415", "429"]),
    );
    expect(doc.components.securitySchemes.stripeSignature.name).toBe("stripe-signature");
  });
});

import { describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  adyenBatch,
  adyenHmac,
  adyenItem,
  adyenRequest,
  paymentIntent,
  providersEnv,
  stripeEvent,
  stripeRequest,
} from "@commerce/testing/provider-requests";
import fc from "fast-check";
import { expectWellFormed, hostileObjectText, numRuns, privatePayments } from "./support";

setDefaultTimeout(120_000);

const { app, rows } = await privatePayments(providersEnv);

const event = stripeEvent("payment_intent.succeeded", paymentIntent(42));
const eventKeys = Object.keys(event);
const { data: _data, ...envelope } = event;
const intentText = JSON.stringify(event.data.object);
const intentKeys = Object.keys(event.data.object);

describe("providers: hostile input, property-based", () => {
  test("S2, S3, G2, E1: Stripe-signed random events (the envelope or the PaymentIntent) are never a 5xx, and a rejection changes no row", async () => {
    const envelopes = hostileObjectText(eventKeys, JSON.stringify(event));
    const objects = hostileObjectText(intentKeys, intentText).map(
      (object) =>
        `{${Object.entries({ ...envelope, id: `evt_${crypto.randomUUID()}` })
          .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`)
          .join(",")},"data":{"object":${object}}}`,
    );
    await fc.assert(
      fc.asyncProperty(fc.oneof(envelopes, objects), async (body) => {
        const response = await app.handle(await stripeRequest(body));
        await rows.after(response.status);
        await expectWellFormed(response);
        expect([200, 400]).toContain(response.status);
      }),
      { numRuns },
    );
  });

  test("Y1, Y2, G2, E1: Adyen items with random members, signed by Adyen's HmacValidator, are never a 5xx, and a rejection changes no row", async () => {
    const item = adyenItem(42);
    const statuses = new Set<number>();
    await fc.assert(
      fc.asyncProperty(hostileObjectText(Object.keys(item), JSON.stringify(item)), async (text) => {
        const hostile = JSON.parse(text);
        let signature: string;
        try {
          signature = adyenHmac(hostile);
        } catch {
          return; // Adyen's own library cannot sign it; Adyen would never send it.
        }
        const additional =
          typeof hostile.additionalData === "object" && hostile.additionalData !== null
            ? hostile.additionalData
            : {};
        const signed = { ...hostile, additionalData: { ...additional, hmacSignature: signature } };
        const response = await app.handle(adyenRequest(adyenBatch([signed])));
        await rows.after(response.status);
        if (response.status !== 200) await expectWellFormed(response);
        expect([200, 400, 401]).toContain(response.status);
        statuses.add(response.status);
      }),
      { numRuns },
    );
    // The library's signature is accepted: the items are judged by their content, not turned away.
    expect(statuses).toContain(200);
    expect(statuses).toContain(400);
  });
});

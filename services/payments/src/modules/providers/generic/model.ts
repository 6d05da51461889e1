import { signatureHeader } from "@commerce/shared/contract/signature";
import { text } from "@commerce/shared/platform/http/fields";
import { named } from "@commerce/shared/platform/openapi";
import { Type } from "@sinclair/typebox";
import { t } from "elysia";

const field = (name: string, message: string) => ({ error: { path: `/${name}`, message } });

/** The inbound notification (W3); unknown fields are allowed, kept in the raw body, ignored. */
export const paymentNotification = t.Object(
  {
    // N9: 1 to 100 characters counted in code points, no control characters.
    event: Object.assign(
      text(1, 100, "Event kind; only payment.succeeded produces an order-paid message"),
      {
        examples: ["payment.succeeded"],
        ...field("event", "event must be a string of 1 to 100 characters"),
      },
    ),
    order_id: Type.Integer({
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      description: "The shop's order id",
      ...field("order_id", "order_id must be a positive integer"),
    }),
    amount: Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: "Amount paid, in minor units of currency",
      ...field("amount", "amount must be an integer of at least 0"),
    }),
    currency: t.String({
      pattern: "^[A-Z]{3}$",
      description: "ISO 4217 code, three upper-case letters",
      examples: ["USD"],
      ...field("currency", "currency must be three upper-case letters"),
    }),
    id: t.Optional(
      t.String({
        minLength: 1,
        maxLength: 255,
        // W3: it becomes the message's Nats-Msg-Id header, where CR, LF or a space cannot go.
        pattern: "^[\\x21-\\x7E]+$",
        description:
          "The provider's notification id; the de-duplication key when present. 1 to 255 " +
          "printable ASCII characters, no space",
        ...field("id", "id must be 1 to 255 printable ASCII characters without spaces"),
      }),
    ),
  },
  {
    additionalProperties: true,
    examples: [
      { event: "payment.succeeded", order_id: 1, amount: 1999, currency: "USD", id: "evt_1" },
    ],
  },
);

export const received = t.Object({
  received: t.Literal(true),
  duplicate: t.Optional(t.Literal(true, { description: "Present when the id was seen before" })),
});

/** The provider's credential, for the OpenAPI document; the handler checks it (401, not 400). */
export const signatureSecurity = {
  name: "paymentSignature",
  scheme: {
    type: "apiKey",
    in: "header",
    name: signatureHeader,
    description:
      "`t=<unix seconds>,v1=<hex>[,v1=<hex>...]`: lower-case hex HMAC-SHA256 of `<t>.` followed " +
      "by the raw body, under a webhook secret (PAYMENT_WEBHOOK_SECRETS), as Stripe's " +
      "Stripe-Signature. `npm run webhook` signs and sends one.",
  },
  who: () =>
    "The payment provider: no bearer token; the X-Signature header, an HMAC of the body under a " +
    "shared webhook secret, is the credential.",
};

// D5: the document's named components.
named("PaymentNotification", paymentNotification);
named("Received", received, {
  examples: [{ received: true }, { received: true, duplicate: true }],
});

export type PaymentNotification = typeof paymentNotification.static;
export type Received = typeof received.static;

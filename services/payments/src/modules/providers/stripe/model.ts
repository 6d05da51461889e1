import { named } from "@commerce/shared/platform/openapi";
import { Type } from "@sinclair/typebox";
import { t } from "elysia";

const field = (path: string, message: string) => ({ error: { path, message } });

/** S2: what the intake reads of Stripe's event object; every other field is kept, unread. */
export const stripeEvent = t.Object(
  {
    id: t.String({
      minLength: 1,
      maxLength: 255,
      pattern: "^[\\x21-\\x7e]+$",
      description: "The event id (evt_...): the notification id",
      ...field("/id", "id must be 1 to 255 printable ASCII characters"),
    }),
    type: t.String({
      minLength: 1,
      maxLength: 100,
      examples: ["payment_intent.succeeded"],
      ...field("/type", "type must be a string of 1 to 100 characters"),
    }),
    data: t.Object(
      { object: t.Object({}, { additionalProperties: true }) },
      { additionalProperties: true, ...field("/data/object", "data.object must be an object") },
    ),
  },
  { additionalProperties: true, description: "A Stripe event, as Stripe sends it" },
);

const amount = (name: string) =>
  Type.Integer({
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    ...field(`/data/object/${name}`, `data.object.${name} must be an integer of at least 0`),
  });

const currency = t.String({
  pattern: "^[A-Za-z]{3}$",
  ...field("/data/object/currency", "data.object.currency must be a three-letter currency code"),
});

/** S3: the amount field each money-moving object carries, checked before it becomes a message. */
export const moneyOf = (name: string) =>
  t.Object({ [name]: amount(name), currency }, { additionalProperties: true });

export const stripeReceived = t.Object({
  received: t.Literal(true),
  duplicate: t.Optional(t.Literal(true, { description: "Present when the event was seen before" })),
});

export const stripeSecurity = {
  name: "stripeSignature",
  scheme: {
    type: "apiKey",
    in: "header",
    name: "stripe-signature",
    description:
      "Stripe's own `Stripe-Signature` (`t=<unix>,v1=<hex>`) under an endpoint signing secret " +
      "(STRIPE_WEBHOOK_SECRETS).",
  },
  who: () =>
    "The payment provider Stripe: no bearer token; the Stripe-Signature header is the credential.",
};

export type StripeEvent = typeof stripeEvent.static;

// D5: the document's named components.
named("StripeEvent", stripeEvent, {
  description: "A Stripe event, as Stripe sends it",
  examples: [
    {
      id: "evt_3PkR2xLkdIwHu7ix0Q1a2b3c",
      object: "event",
      type: "payment_intent.succeeded",
      livemode: false,
      data: {
        object: {
          id: "pi_3PkR2xLkdIwHu7ix1Zz9y8x7",
          object: "payment_intent",
          amount: 4200,
          amount_received: 4200,
          currency: "usd",
          metadata: { order_id: "42" },
        },
      },
    },
  ],
});

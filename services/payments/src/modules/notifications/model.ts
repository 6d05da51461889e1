import { signatureHeader } from "@commerce/shared/signature";
import { Type } from "@sinclair/typebox";
import { t } from "elysia";

const field = (name: string, message: string) => ({ error: { path: `/${name}`, message } });

/** The inbound notification (W3); unknown fields are allowed, kept in the raw body, ignored. */
export const paymentNotification = t.Object(
  {
    event: t.String({
      minLength: 1,
      maxLength: 100,
      description: "Event kind; only payment.succeeded produces an order-paid message",
      examples: ["payment.succeeded"],
      ...field("event", "event must be a string of 1 to 100 characters"),
    }),
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
        description: "The provider's notification id; the de-duplication key when present",
        ...field("id", "id must be a string of 1 to 255 characters"),
      }),
    ),
  },
  { additionalProperties: true },
);

export const received = t.Object({
  received: t.Literal(true),
  duplicate: t.Optional(t.Literal(true, { description: "Present when the id was seen before" })),
});

/** Documented here, checked by the handler: a missing or wrong signature must answer 401, not 400. */
export const signatureParameter = {
  name: signatureHeader,
  in: "header",
  required: true,
  description:
    "`t=<unix seconds>,v1=<hex>[,v1=<hex>...]`: lowercase hex HMAC-SHA256 of `<t>.<raw body>` " +
    "under a webhook secret, as Stripe's Stripe-Signature",
  schema: { type: "string", example: "t=1700000000,v1=5257a869e7ec...d0b0b0" },
} as const;

export type PaymentNotification = typeof paymentNotification.static;
export type Received = typeof received.static;

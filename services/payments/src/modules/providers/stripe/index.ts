import { verifySignature } from "@commerce/shared/contract/signature";
import { Var } from "@commerce/shared/platform/env";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import {
  InvalidNotificationError,
  orderIdOf,
  type ParsedNotification,
  type PaymentMode,
  type PaymentProvider,
  type ProviderPlugin,
  parseJsonObject,
  providerBodyLimit,
  SignatureRejectedError,
  schemaErrors,
  storable,
} from "../provider";
import { moneyEvents } from "./events";
import { moneyOf, type StripeEvent, stripeEvent, stripeReceived, stripeSecurity } from "./model";

export type StripeSettings = { secrets: string[] };

type StripeObject = Record<string, unknown>;

const eventSchema = TypeCompiler.Compile(stripeEvent);
const moneySchemas = new Map(
  [...moneyEvents.values()].map(({ amount }) => [amount, TypeCompiler.Compile(moneyOf(amount))]),
);

/** Stripe's ids are short printable ASCII; anything else is not one (and never reaches a message). */
const stripeId = /^[\x21-\x7e]{1,255}$/;

const idOf = (value: unknown): string | null => {
  // An expanded object (`expand[]=payment_intent`) carries its id.
  const id = typeof value === "object" && value !== null ? (value as StripeObject).id : value;
  return typeof id === "string" && stripeId.test(id) ? id : null;
};

/** S3: the PaymentIntent a notification is about: the object itself, or the one it names. */
function paymentIntentOf(object: StripeObject): string | null {
  if (object.object === "payment_intent") return idOf(object.id);
  // L5: a Dispute names its PaymentIntent, and always its Charge.
  if (object.object === "dispute") return idOf(object.payment_intent) ?? idOf(object.charge);
  return idOf(object.payment_intent) ?? idOf(object.id);
}

/** S3: the order from `metadata.order_id`, else a Checkout Session's `client_reference_id`. */
function orderOf(object: StripeObject): number | null {
  const metadata = object.metadata as StripeObject | null | undefined;
  const fromMetadata = typeof metadata === "object" && metadata !== null ? metadata.order_id : null;
  return orderIdOf(fromMetadata ?? object.client_reference_id ?? null);
}

/** G4: why an event of the other mode's money moves nothing; undefined when it is the shop's. */
function otherMode(event: StripeEvent, mode: PaymentMode): string | undefined {
  const { livemode } = event as { livemode?: unknown };
  if (livemode === (mode === "live")) return undefined;
  return `livemode is ${JSON.stringify(livemode ?? null)}; PAYMENT_MODE is ${mode}`;
}

function asParsed(event: StripeEvent, mode: PaymentMode): ParsedNotification {
  const object = event.data.object as StripeObject;
  const money = moneyEvents.get(event.type);
  const moves = money !== undefined && (money.when?.(object) ?? true);
  const check = money && moves ? moneySchemas.get(money.amount) : undefined;
  if (check) {
    const errors = schemaErrors(check, object);
    if (errors.length)
      throw new InvalidNotificationError("invalid_schema", "The request body is invalid", errors, {
        event: event.type,
      });
  }
  const amount = object[money?.amount ?? "amount"];
  const currency = object.currency;
  return {
    id: event.id,
    event: event.type,
    orderId: orderOf(object),
    paymentRef: paymentIntentOf(object),
    amount: Number.isSafeInteger(amount) && (amount as number) >= 0 ? (amount as number) : null,
    currency:
      typeof currency === "string" && /^[A-Za-z]{3}$/.test(currency)
        ? currency.toUpperCase()
        : null,
    message: moves ? money?.message : undefined,
    stage: moves ? money?.stage?.(object) : undefined,
    ignored: moves ? otherMode(event, mode) : undefined,
  };
}

/**
 * S2, S3, G4: one Stripe event as a notification, checked against the event's schema (400, an
 * `InvalidNotificationError`, when it is not one). The webhook's body and an event listed by
 * Stripe's API (B1) are read by this same function.
 */
export function stripeEventNotification(value: object, mode: PaymentMode): ParsedNotification {
  const errors = schemaErrors(eventSchema, value);
  const { type } = value as { type?: unknown };
  if (typeof type === "string" && !storable(type) && !errors.length)
    errors.push({
      path: "/type",
      message: "type must be Unicode text without NUL or control characters",
    });
  if (errors.length)
    throw new InvalidNotificationError("invalid_schema", "The request body is invalid", errors);
  return asParsed(value as StripeEvent, mode);
}

/** The variables this provider reads, part of the payments service's schema. */
const stripeVariables = {
  STRIPE_WEBHOOK_SECRETS: Var.optional(
    Var.list(Var.text({ minLength: 16 }), {
      secret: true,
      expected: "comma-separated signing secrets (whsec_...), each at least 16 characters",
      description:
        "S1: Stripe's endpoint signing secrets, any one may match; unset, Stripe's route is 404",
    }),
  ),
};

/** Section 15, S1–S3: Stripe's events, as Stripe's webhook endpoints send them. */
export const stripe: ProviderPlugin<StripeSettings, typeof stripeVariables> = {
  name: "stripe",
  variables: stripeVariables,
  settingsFrom: ({ STRIPE_WEBHOOK_SECRETS: secrets }) => (secrets ? { secrets } : undefined),
  create: ({ secrets }, { toleranceSeconds, mode }): PaymentProvider => ({
    name: "stripe",
    path: "/stripe",
    bodyLimit: providerBodyLimit,
    authenticate({ headers, rawBody, nowSeconds }) {
      const header = headers.get("stripe-signature");
      const check = verifySignature(header, rawBody, secrets, toleranceSeconds, nowSeconds);
      if (!check.ok) throw new SignatureRejectedError(check.reason, "Stripe-Signature");
    },
    parse(rawBody) {
      const { text, value } = parseJsonObject(rawBody);
      return { text, notifications: [stripeEventNotification(value, mode)] };
    },
    claimedOrder: (body) => {
      const object = (body as { data?: { object?: unknown } }).data?.object;
      return typeof object === "object" && object !== null ? orderOf(object as StripeObject) : null;
    },
    answer: ({ duplicate }) => ({
      body: duplicate ? { received: true, duplicate: true } : { received: true },
    }),
    document: {
      operationId: "receiveStripeEvent",
      summary: "Receive a Stripe event (webhook endpoint)",
      description:
        "Stripe's events as Stripe sends them, verified by Stripe-Signature under " +
        "STRIPE_WEBHOOK_SECRETS (401). payment_intent.succeeded, checkout.session.completed " +
        "(paid), checkout.session.async_payment_succeeded / _failed, payment_intent." +
        "payment_failed and charge.refunded move money, charge.dispute.created / closed make a " +
        "dispute message; every other event is stored and answered 200, and so is an " +
        "event whose livemode is not PAYMENT_MODE's, without a message. The order is data.object.metadata.order_id, else client_reference_id. " +
        "404 when STRIPE_WEBHOOK_SECRETS is not set.",
      security: stripeSecurity,
      requestSchema: stripeEvent,
      answerSchema: stripeReceived,
    },
  }),
};

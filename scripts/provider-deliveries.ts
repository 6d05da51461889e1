/**
 * What `npm run webhook -- --provider stripe|adyen` sends: each provider's body and
 * authentication as that provider really sends them, signed with the providers' own libraries
 * (dev dependencies), so what the simulator shows is what Stripe or Adyen will do.
 */
import { hmacValidator } from "@adyen/api-library";
import Stripe from "stripe";

export type Delivery = {
  path: string;
  body: string;
  notificationId: string;
  /** Fresh headers for each attempt (Stripe signs a timestamp). */
  headers: () => Promise<Record<string, string>>;
};

export type DeliveryInput = {
  orderId: number;
  amount: number;
  currency: string;
  event: string | undefined;
  id: string | undefined;
  paymentRef: string | undefined;
  success: boolean;
};

const randomId = (prefix: string) =>
  `${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
const firstOf = (list: string | undefined) => list?.split(",")[0]?.trim() || undefined;
/** G4: the money the payments service moves orders for: test unless PAYMENT_MODE says live. */
const live = () => process.env.PAYMENT_MODE?.trim().toLowerCase() === "live";

/** The object a Stripe event of `type` carries, with the fields Stripe sends. */
function stripeObject(type: string, input: DeliveryInput, intentId: string) {
  const currency = input.currency.toLowerCase();
  const metadata = { order_id: String(input.orderId) };
  if (type.startsWith("checkout.session."))
    return {
      id: randomId("cs_test"),
      object: "checkout.session",
      amount_total: input.amount,
      client_reference_id: String(input.orderId),
      currency,
      metadata: {},
      mode: "payment",
      payment_intent: intentId,
      payment_status: type.endsWith("failed") ? "unpaid" : "paid",
      status: "complete",
    };
  // L5: a Dispute names the PaymentIntent (--payment-ref), not the order; closed is won unless
  // --success false.
  if (type.startsWith("charge.dispute."))
    return {
      id: randomId("dp"),
      object: "dispute",
      amount: input.amount,
      charge: randomId("ch"),
      currency,
      metadata: {},
      payment_intent: intentId,
      reason: "fraudulent",
      status: type.endsWith(".closed") ? (input.success ? "won" : "lost") : "needs_response",
    };
  if (type.startsWith("charge."))
    return {
      id: randomId("ch"),
      object: "charge",
      amount: input.amount,
      amount_refunded: type === "charge.refunded" ? input.amount : 0,
      currency,
      metadata,
      payment_intent: intentId,
      refunded: type === "charge.refunded",
    };
  const failed = type === "payment_intent.payment_failed";
  return {
    id: intentId,
    object: "payment_intent",
    amount: input.amount,
    amount_received: failed ? 0 : input.amount,
    currency,
    metadata,
    status: failed ? "requires_payment_method" : "succeeded",
  };
}

export function stripeDelivery(input: DeliveryInput): Delivery {
  const secret =
    firstOf(process.env.STRIPE_WEBHOOK_SECRETS) ??
    fail("STRIPE_WEBHOOK_SECRETS is not set (the signing secret the payments service checks)");
  const type = input.event ?? "payment_intent.succeeded";
  const event = {
    id: input.id ?? randomId("evt"),
    object: "event",
    api_version: "2025-09-30.clover",
    created: Math.floor(Date.now() / 1000),
    data: { object: stripeObject(type, input, input.paymentRef ?? randomId("pi")) },
    livemode: live(),
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    type,
  };
  // Stripe sends pretty-printed JSON; its signature covers those bytes.
  const body = JSON.stringify(event, null, 2);
  const stripe = new Stripe("sk_test_unused");
  return {
    path: "/api/webhooks/stripe",
    body,
    notificationId: event.id,
    headers: async () => ({
      "content-type": "application/json; charset=utf-8",
      "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
      "stripe-signature": await stripe.webhooks.generateTestHeaderStringAsync({
        payload: body,
        secret,
      }),
    }),
  };
}

export function adyenDelivery(input: DeliveryInput): Delivery {
  const key =
    firstOf(process.env.ADYEN_HMAC_KEYS) ??
    fail("ADYEN_HMAC_KEYS is not set (the HMAC key the payments service checks)");
  const eventCode = input.event ?? "AUTHORISATION";
  const pspReference = input.id ?? String(Math.floor(Math.random() * 9e15) + 1e15);
  const item: Record<string, unknown> = {
    additionalData: {},
    amount: { currency: input.currency, value: input.amount },
    eventCode,
    eventDate: new Date().toISOString(),
    // G4: an item of another merchant account moves nothing.
    merchantAccountCode:
      firstOf(process.env.ADYEN_MERCHANT_ACCOUNTS) ??
      fail(
        "ADYEN_MERCHANT_ACCOUNTS is not set (the merchant account the payments service accepts)",
      ),
    merchantReference: String(input.orderId),
    pspReference,
    success: String(input.success),
    ...(input.paymentRef && input.paymentRef !== pspReference
      ? { originalReference: input.paymentRef }
      : {}),
  };
  (item.additionalData as Record<string, string>).hmacSignature = new hmacValidator().calculateHmac(
    item as never,
    key,
  );
  const body = JSON.stringify({
    live: String(live()),
    notificationItems: [{ NotificationRequestItem: item }],
  });
  const { ADYEN_WEBHOOK_USERNAME: user, ADYEN_WEBHOOK_PASSWORD: password } = process.env;
  const basic: Record<string, string> =
    user && password
      ? { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}` }
      : {};
  return {
    path: "/api/webhooks/adyen",
    body,
    notificationId: `adyen:${eventCode}:${pspReference}:${input.success}`,
    headers: async () => ({ "content-type": "application/json", ...basic }),
  };
}

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

/**
 * Stripe's and Adyen's webhook requests as those providers send them, signed by their own
 * libraries (`stripe`, `@adyen/api-library`), never by our code: a test that signs with our own
 * scheme would only prove we agree with ourselves.
 */
import { hmacValidator } from "@adyen/api-library";
import Stripe from "stripe";
import { nowSeconds } from "./payments-requests";

export const stripeSecret = "whsec_test_5e1f0a3b9c7d2e4f6a8b0c1d3e5f7a9b";
export const otherStripeSecret = "whsec_test_other_secret_not_configured";
export const adyenHmacKey = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";
export const otherAdyenHmacKey = "D7DD5BA6146493707BF0BE7496F6404EC7A63616B7158EC927B9F54BB436765F";
export const adyenUsername = "adyen_webhook_user";
export const adyenPassword = "a-long-webhook-password-42";

/** The settings that turn both providers on, for `startPayments({ env })`. */
export const providersEnv = {
  STRIPE_WEBHOOK_SECRETS: stripeSecret,
  ADYEN_HMAC_KEYS: adyenHmacKey,
  ADYEN_WEBHOOK_USERNAME: adyenUsername,
  ADYEN_WEBHOOK_PASSWORD: adyenPassword,
  // G4: the merchant account adyenItem's items are of.
  ADYEN_MERCHANT_ACCOUNTS: "ShopECOM",
};

const stripe = new Stripe("sk_test_not_used_for_requests");
const randomId = (prefix: string) =>
  `${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;

type StripeObject = Record<string, unknown>;

/** A PaymentIntent as Stripe sends it in an event, with the fields we do not read. */
export function paymentIntent(orderId: number | string | null, extra: StripeObject = {}) {
  return {
    id: randomId("pi"),
    object: "payment_intent",
    amount: 1999,
    amount_capturable: 0,
    amount_received: 1999,
    capture_method: "automatic_async",
    client_secret: "pi_secret_redacted",
    created: nowSeconds(),
    currency: "usd",
    customer: null,
    latest_charge: randomId("ch"),
    livemode: false,
    metadata: orderId === null ? {} : { order_id: String(orderId) },
    payment_method: randomId("pm"),
    payment_method_types: ["card"],
    status: "succeeded",
    ...extra,
  };
}

/** A Checkout Session (mode payment) as Stripe sends it, its order in `client_reference_id`. */
export function checkoutSession(
  orderId: number | null,
  paymentIntentId: string,
  extra: StripeObject = {},
) {
  return {
    id: randomId("cs_test"),
    object: "checkout.session",
    amount_subtotal: 1999,
    amount_total: 1999,
    client_reference_id: orderId === null ? null : String(orderId),
    currency: "usd",
    customer_details: { email: "jenny@example.com", name: "Jenny Rosen" },
    livemode: false,
    metadata: {},
    mode: "payment",
    payment_intent: paymentIntentId,
    payment_status: "paid",
    status: "complete",
    url: null,
    ...extra,
  };
}

/** A Charge as `charge.refunded` carries it; Stripe copies the PaymentIntent's metadata onto it. */
export function refundedCharge(orderId: number, paymentIntentId: string, extra: StripeObject = {}) {
  return {
    id: randomId("ch"),
    object: "charge",
    amount: 1999,
    amount_captured: 1999,
    amount_refunded: 1999,
    captured: true,
    currency: "usd",
    livemode: false,
    metadata: { order_id: String(orderId) },
    paid: true,
    payment_intent: paymentIntentId,
    refunded: true,
    status: "succeeded",
    ...extra,
  };
}

/** Stripe's event envelope around `object`, as a webhook endpoint receives it. */
export function stripeEvent(type: string, object: StripeObject, extra: StripeObject = {}) {
  return {
    id: randomId("evt"),
    object: "event",
    api_version: "2025-09-30.clover",
    created: nowSeconds(),
    data: { object, previous_attributes: {} },
    livemode: false,
    pending_webhooks: 1,
    request: { id: randomId("req"), idempotency_key: crypto.randomUUID() },
    type,
    ...extra,
  };
}

/** Stripe's body is pretty-printed JSON; the signature covers those bytes. */
export const stripeBody = (event: StripeObject) => JSON.stringify(event, null, 2);

/** The Stripe-Signature Stripe's own library makes for `payload`. */
export const stripeSignature = (payload: string, secret = stripeSecret, timestamp = nowSeconds()) =>
  stripe.webhooks.generateTestHeaderStringAsync({ payload, secret, timestamp });

export const stripeUrl = "http://localhost/api/webhooks/stripe";

/** A signed request as Stripe sends it; every part can be overridden. */
export async function stripeRequest(
  event: StripeObject | string,
  options: {
    secret?: string;
    timestamp?: number;
    signature?: string | null;
    contentType?: string;
  } = {},
): Promise<Request> {
  const body = typeof event === "string" ? event : stripeBody(event);
  const signature =
    options.signature === undefined
      ? await stripeSignature(body, options.secret, options.timestamp)
      : options.signature;
  const headers: Record<string, string> = {
    "content-type": options.contentType ?? "application/json; charset=utf-8",
    "content-length": String(Buffer.byteLength(body)),
    "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
  };
  if (signature !== null) headers["stripe-signature"] = signature;
  return new Request(stripeUrl, { method: "POST", headers, body });
}

type AdyenItem = Record<string, unknown> & { additionalData?: Record<string, unknown> };

/** A `NotificationRequestItem` as Adyen sends it, unsigned, with fields we do not read. */
export function adyenItem(
  orderId: number | string | null,
  extra: Record<string, unknown> = {},
): AdyenItem {
  return {
    additionalData: {
      authCode: "058705",
      cardSummary: "0010",
      expiryDate: "03/2030",
      "checkout.cardAddedBrand": "visa",
    },
    amount: { currency: "EUR", value: 1999 },
    eventCode: "AUTHORISATION",
    eventDate: new Date().toISOString().replace(/\.\d+Z$/, "+00:00"),
    merchantAccountCode: "ShopECOM",
    merchantReference: orderId === null ? undefined : String(orderId),
    operations: ["CANCEL", "CAPTURE", "REFUND"],
    paymentMethod: "visa",
    pspReference: String(Math.floor(Math.random() * 9e15) + 1e15),
    reason: "058705:0010:03/2030",
    success: "true",
    ...extra,
  };
}

/** Adyen's HMAC of one item, by Adyen's own HmacValidator. */
export const adyenHmac = (item: AdyenItem, key = adyenHmacKey) =>
  new hmacValidator().calculateHmac(item as never, key);

/** Signs each item (its own key or `key`) into `additionalData.hmacSignature`. */
export function signedItem(item: AdyenItem, key = adyenHmacKey): AdyenItem {
  return {
    ...item,
    additionalData: { ...item.additionalData, hmacSignature: adyenHmac(item, key) },
  };
}

/** Adyen's standard webhook body: a batch of items. */
export const adyenBatch = (items: AdyenItem[], live = "false") => ({
  live,
  notificationItems: items.map((item) => ({ NotificationRequestItem: item })),
});

export const adyenUrl = "http://localhost/api/webhooks/adyen";

export const basicAuth = (username = adyenUsername, password = adyenPassword) =>
  `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;

/** A request as Adyen sends it (Basic credentials unless `authorization` is null). */
export function adyenRequest(
  batch: Record<string, unknown> | string,
  options: { authorization?: string | null; contentType?: string } = {},
): Request {
  const body = typeof batch === "string" ? batch : JSON.stringify(batch);
  const headers: Record<string, string> = {
    "content-type": options.contentType ?? "application/json",
    "content-length": String(Buffer.byteLength(body)),
    "user-agent": "Adyen HttpClient 1.0",
  };
  const authorization = options.authorization === undefined ? basicAuth() : options.authorization;
  if (authorization !== null) headers.authorization = authorization;
  return new Request(adyenUrl, { method: "POST", headers, body });
}

import type { PaymentEvent } from "@commerce/shared/contract/messages";
import { signatureHeader, verifySignature } from "@commerce/shared/contract/signature";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import {
  InvalidNotificationError,
  orderIdOf,
  type ParsedNotification,
  type PaymentProvider,
  parseJsonObject,
  SignatureRejectedError,
  schemaErrors,
  storable,
  type WebhookSettings,
} from "../provider";
import {
  type PaymentNotification,
  paymentNotification,
  received,
  signatureSecurity,
} from "./model";

const notificationSchema = TypeCompiler.Compile(paymentNotification);

/** W5: the events of the seed's format that make a message. */
const genericEvents: PaymentEvent[] = ["payment.succeeded", "payment.refunded", "payment.failed"];

/** W3: the body as a notification, or 400 naming every offending field. */
export function parseGeneric(rawBody: Uint8Array): {
  notification: PaymentNotification;
  text: string;
} {
  const { text, value: data } = parseJsonObject(rawBody);
  const errors = schemaErrors(notificationSchema, data);
  for (const name of ["event", "id"]) {
    const value = (data as Record<string, unknown>)[name];
    if (typeof value === "string" && !storable(value) && !errors.some((e) => e.path === `/${name}`))
      errors.push({
        path: `/${name}`,
        message: `${name} must be Unicode text without NUL or control characters`,
      });
  }
  if (errors.length) {
    const { event, order_id } = data as Record<string, unknown>;
    throw new InvalidNotificationError("invalid_schema", "The request body is invalid", errors, {
      event: typeof event === "string" && event.length <= 100 ? event : undefined,
      order_id: Number.isSafeInteger(order_id) ? (order_id as number) : undefined,
    });
  }
  return { notification: data as PaymentNotification, text };
}

/** W4: the provider's `id`, else a hash of what makes two notifications the same. */
export function notificationIdOf(notification: PaymentNotification): string {
  if (notification.id !== undefined) return notification.id;
  const { event, order_id, amount, currency } = notification;
  return new Bun.CryptoHasher("sha256")
    .update(`${event}|${order_id}|${amount}|${currency}`)
    .digest("hex");
}

/** M1: for the seed's format the notification is the payment, so its id is the reference. */
function asParsed(notification: PaymentNotification): ParsedNotification {
  const id = notificationIdOf(notification);
  return {
    id,
    event: notification.event,
    orderId: notification.order_id,
    paymentRef: id,
    amount: notification.amount,
    currency: notification.currency,
    // The seed's format knows these three; disputes come from Stripe and Adyen only (L5).
    message: genericEvents.find((event) => event === notification.event),
  };
}

/** W1, W7: 64 KiB is far above any real notification and small enough to read whole. */
export const genericBodyLimit = 64 * 1024;

/** Section 9: the seed's own notification format, signed with X-Signature (W2); always on. */
export const generic = {
  name: "generic",
  create: ({ secrets, toleranceSeconds }: WebhookSettings): PaymentProvider => ({
    name: "generic",
    path: "/payment",
    bodyLimit: genericBodyLimit,
    authenticate({ headers, rawBody, nowSeconds }) {
      const check = verifySignature(
        headers.get(signatureHeader),
        rawBody,
        secrets,
        toleranceSeconds,
        nowSeconds,
      );
      if (!check.ok) throw new SignatureRejectedError(check.reason);
    },
    parse(rawBody) {
      const { notification, text } = parseGeneric(rawBody);
      return { text, notifications: [asParsed(notification)] };
    },
    claimedOrder: (body) => orderIdOf((body as { order_id?: unknown }).order_id),
    answer: ({ duplicate }) => ({
      body: duplicate ? { received: true, duplicate: true } : { received: true },
    }),
    document: {
      operationId: "receivePaymentNotification",
      summary: "Receive a signed payment notification",
      description:
        "Checks, in order: body size (413), Content-Type application/json (415), per-source-IP " +
        "rate limit (429), X-Signature (401), JSON and schema (400). Accepted notifications are " +
        "stored with their outbox message in one transaction; a repeated notification id " +
        "answers 200 with duplicate: true and changes nothing. 503 when the database is down.",
      security: signatureSecurity,
      requestSchema: paymentNotification,
      answerSchema: received,
    },
  }),
};

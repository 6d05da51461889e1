import { type FieldError, UnauthorizedError, ValidationError } from "@commerce/shared/errors";
import type { PaymentOrderPaid } from "@commerce/shared/messages";
import { type SignatureRejection, verifySignature } from "@commerce/shared/signature";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { Database } from "../../db";
import { notifications, outbox } from "../../db/schema";
import { type PaymentNotification, paymentNotification } from "./model";

export type WebhookSettings = { secrets: string[]; toleranceSeconds: number };

/** Why a notification was turned away (W1, W9): the `reason` of its log line and metric. */
export type RejectionReason =
  | "too_large"
  | "unsupported_media_type"
  | "rate_limited"
  | `signature_${SignatureRejection}`
  | "invalid_json"
  | "invalid_schema";

const signatureProblems: Record<SignatureRejection, string> = {
  missing: "The X-Signature header is missing",
  malformed: "The X-Signature header is malformed",
  stale: "The X-Signature timestamp is older than the tolerance",
  future: "The X-Signature timestamp is further ahead than the tolerance",
  mismatch: "The X-Signature does not match the body",
};

export class SignatureRejectedError extends UnauthorizedError {
  constructor(readonly reason: SignatureRejection) {
    super(signatureProblems[reason]);
  }
}

export class InvalidNotificationError extends ValidationError {
  constructor(
    readonly reason: "invalid_json" | "invalid_schema",
    detail: string,
    errors?: FieldError[],
    /** What could be read of the body, for the log line only. */
    readonly partial: { event?: string; order_id?: number } = {},
  ) {
    super(detail, errors);
  }
}

/** W2: the raw body must carry a fresh signature under one of the configured secrets. */
export function authenticate(
  header: string | null,
  rawBody: Uint8Array,
  { secrets, toleranceSeconds }: WebhookSettings,
  nowSeconds = Math.floor(Date.now() / 1000),
): void {
  const check = verifySignature(header, rawBody, secrets, toleranceSeconds, nowSeconds);
  if (!check.ok) throw new SignatureRejectedError(check.reason);
}

const notificationSchema = TypeCompiler.Compile(paymentNotification);

/** W3: the body as a notification, or 400 naming every offending field. */
export function parseNotification(rawBody: Uint8Array): {
  notification: PaymentNotification;
  text: string;
} {
  let text: string;
  let data: unknown;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(rawBody);
    data = JSON.parse(text);
  } catch {
    throw new InvalidNotificationError("invalid_json", "The request body is not valid JSON");
  }
  if (typeof data !== "object" || data === null || Array.isArray(data))
    throw new InvalidNotificationError("invalid_schema", "The request body is invalid", [
      { path: "", message: "The body must be a JSON object" },
    ]);
  const errors = fieldErrors(data);
  if (errors.length) {
    const { event, order_id } = data as Record<string, unknown>;
    throw new InvalidNotificationError("invalid_schema", "The request body is invalid", errors, {
      event: typeof event === "string" && event.length <= 100 ? event : undefined,
      order_id: Number.isSafeInteger(order_id) ? (order_id as number) : undefined,
    });
  }
  return { notification: data as PaymentNotification, text };
}

/** Text PostgreSQL can store as sent: well-formed Unicode without NUL (else the insert fails). */
const storable = (value: string) => value.isWellFormed() && !value.includes("\u0000");

/** One entry per offending field: the schema's own message, then the text fields' storability. */
function fieldErrors(data: object): FieldError[] {
  const errors: FieldError[] = [];
  if (!notificationSchema.Check(data))
    for (const error of notificationSchema.Errors(data)) {
      const custom = (error.schema as { error?: FieldError }).error;
      const found = custom ?? { path: error.path, message: error.message };
      if (!errors.some((known) => known.path === found.path)) errors.push(found);
    }
  for (const name of ["event", "id"]) {
    const value = (data as Record<string, unknown>)[name];
    if (typeof value === "string" && !storable(value) && !errors.some((e) => e.path === `/${name}`))
      errors.push({
        path: `/${name}`,
        message: `${name} must be Unicode text without NUL characters`,
      });
  }
  return errors;
}

/** W4: the provider's `id`, else a hash of what makes two notifications the same. */
export function notificationIdOf(notification: PaymentNotification): string {
  if (notification.id !== undefined) return notification.id;
  const { event, order_id, amount, currency } = notification;
  return new Bun.CryptoHasher("sha256")
    .update(`${event}|${order_id}|${amount}|${currency}`)
    .digest("hex");
}

export const orderPaidEvent = "payment.succeeded";

/**
 * W5, W8: stores the notification and, for `payment.succeeded`, its order-paid message in the
 * outbox, in one transaction. A notification id already stored writes nothing (`duplicate`);
 * concurrent copies wait on the primary key, so exactly one of them inserts.
 */
export async function storeNotification(
  db: Database,
  input: {
    id: string;
    notification: PaymentNotification;
    rawBody: string;
    sourceIp: string;
    orderPaidSubject: string;
  },
): Promise<{ duplicate: boolean; outboxWritten: boolean }> {
  const { id, notification, rawBody, sourceIp, orderPaidSubject } = input;
  return db.transaction(async (tx) => {
    const [stored] = await tx
      .insert(notifications)
      .values({
        id,
        event: notification.event,
        orderId: notification.order_id,
        amount: notification.amount,
        currency: notification.currency,
        rawBody,
        sourceIp,
      })
      .onConflictDoNothing({ target: notifications.id })
      .returning({ receivedAt: notifications.receivedAt });
    if (!stored) return { duplicate: true, outboxWritten: false };
    if (notification.event !== orderPaidEvent) return { duplicate: false, outboxWritten: false };
    const message: PaymentOrderPaid = {
      notification_id: id,
      order_id: notification.order_id,
      amount: notification.amount,
      currency: notification.currency,
      received_at: stored.receivedAt.toISOString(),
    };
    await tx.insert(outbox).values({ subject: orderPaidSubject, messageId: id, payload: message });
    return { duplicate: false, outboxWritten: true };
  });
}

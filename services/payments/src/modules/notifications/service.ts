import type { Sql } from "@commerce/shared/database";
import { type FieldError, UnauthorizedError, ValidationError } from "@commerce/shared/errors";
import { parseJsonBytes } from "@commerce/shared/http/body";
import { type SignatureRejection, verifySignature } from "@commerce/shared/signature";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { messagePayload } from "../../lib/outbox-message";
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
  const parsed = parseJsonBytes(rawBody);
  if (!parsed)
    throw new InvalidNotificationError("invalid_json", "The request body is not valid JSON");
  const { text, value: data } = parsed;
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

/**
 * W5, W8, O8: stores the notification with its trace context and, for `payment.succeeded`, `payment.refunded` and
 * `payment.failed`, its message (M1) on `messageSubject` in the outbox, atomically. A notification id already stored writes nothing (`duplicate`);
 * concurrent copies wait on the primary key, so exactly one of them inserts.
 *
 * One statement, not a transaction of two inserts: it is the whole cost of accepting a
 * notification, and one round trip instead of four keeps the answer fast under load. Plain
 * postgres.js, which prepares it once per connection.
 */
export async function storeNotification(
  sql: Sql,
  input: {
    id: string;
    notification: PaymentNotification;
    rawBody: string;
    sourceIp: string;
    /** O8: the trace context of the request that delivered it, sent on with its message. */
    traceparent: string | null;
    /** Where this notification's message goes; undefined for an event that makes none. */
    messageSubject: string | undefined;
  },
): Promise<{ duplicate: boolean; outboxWritten: boolean }> {
  const { id, notification, rawBody, sourceIp, traceparent, messageSubject } = input;
  const { event, order_id, amount, currency } = notification;
  const [result] = await sql<{ stored: number; queued: number }[]>`
    with stored as (
      insert into payments.notifications
        (id, event, order_id, amount, currency, raw_body, source_ip, traceparent)
      values (${id}, ${event}, ${order_id}, ${amount}, ${currency}, ${rawBody}, ${sourceIp}, ${traceparent})
      on conflict (id) do nothing
      returning id, order_id, amount, currency, received_at, traceparent
    ), queued as (
      insert into payments.outbox (subject, message_id, payload, headers)
      select ${messageSubject ?? ""}, id, ${messagePayload(sql)},
        case when traceparent is null then null else jsonb_build_object('traceparent', traceparent) end
      from stored where ${messageSubject !== undefined}::boolean
      returning id
    )
    select (select count(*) from stored)::int as stored, (select count(*) from queued)::int as queued`;
  return { duplicate: result.stored === 0, outboxWritten: result.queued > 0 };
}

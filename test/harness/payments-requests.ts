/** Webhook requests as the payment provider sends them, and what tests check of their effects. */

import { signPayload } from "@commerce/shared/contract/signature";
import type { Sql } from "@commerce/shared/platform/database";
import { createLogger, type Logger } from "@commerce/shared/platform/logger";
import { RateLimiter } from "@commerce/shared/platform/rate-limit";
import { webhookSecret } from "./basics";

export const webhookUrl = "http://localhost/api/webhooks/payment";

export function collectingLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  return {
    lines,
    logger: createLogger("debug", { service: "payments" }, (line) => lines.push(JSON.parse(line))),
  };
}

/** One request a second per IP on a clock that never moves, so only `burst` requests get through. */
export const frozenLimiter = (burst: number) =>
  new RateLimiter({ ratePerSecond: 1, burst }, () => 0);

/** An order id no other test uses, so rows can be counted per test. */
export const uniqueOrderId = () => 1_000_000_000_000 + Math.floor(Math.random() * 8e15);

export const nowSeconds = () => Math.floor(Date.now() / 1000);

export type NotificationBody = {
  event?: unknown;
  order_id?: unknown;
  amount?: unknown;
  currency?: unknown;
  id?: unknown;
  [field: string]: unknown;
};

export const paymentSucceeded = (orderId: number, extra: NotificationBody = {}) => ({
  event: "payment.succeeded",
  order_id: orderId,
  amount: 1999,
  currency: "USD",
  ...extra,
});

/** A signed webhook request as the provider sends it; every part can be overridden. */
export function notificationRequest(
  body: NotificationBody | string,
  options: {
    signWith?: string;
    timestamp?: number;
    signature?: string | null;
    contentType?: string | null;
    headers?: Record<string, string>;
  } = {},
): Request {
  const raw = typeof body === "string" ? body : JSON.stringify(body);
  const signature =
    options.signature === undefined
      ? signPayload(raw, options.signWith ?? webhookSecret, options.timestamp ?? nowSeconds())
      : options.signature;
  // As an HTTP client would; Request objects built in-process carry no length of their own.
  const headers: Record<string, string> = {
    "content-length": String(Buffer.byteLength(raw)),
    ...options.headers,
  };
  const contentType = options.contentType === undefined ? "application/json" : options.contentType;
  if (contentType !== null) headers["content-type"] = contentType;
  if (signature !== null) headers["x-signature"] = signature;
  return new Request(webhookUrl, { method: "POST", headers, body: raw });
}

/** A response body as parsed JSON, for asserting on documents and problems. */
export const jsonOf = async (response: Response): Promise<any> => response.json();

export async function rowsFor(sql: Sql, orderId: number) {
  const [{ notifications }] = await sql<{ notifications: number }[]>`
    select count(*)::int as notifications from payments.notifications where order_id = ${orderId}`;
  const [{ outbox }] = await sql<{ outbox: number }[]>`
    select count(*)::int as outbox from payments.outbox
    where payload->>'order_id' = ${String(orderId)}`;
  return { notifications, outbox };
}

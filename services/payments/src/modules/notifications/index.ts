import { ClientClosedError, HttpError } from "@commerce/shared/errors";
import {
  assertContentLength,
  assertJsonContentType,
  readBodyWithin,
} from "@commerce/shared/http/body";
import { requestLogFields, traceOf } from "@commerce/shared/http/request-log";
import { problems } from "@commerce/shared/openapi";
import { clientIp } from "@commerce/shared/rate-limit";
import { signatureHeader } from "@commerce/shared/signature";
import { formatTraceparent, inSpan } from "@commerce/shared/tracing";
import { Elysia } from "elysia";
import type { PaymentsDeps } from "../../deps";
import { messageSubjectOf } from "../../lib/outbox-message";
import { paymentNotification, received } from "./model";
import {
  authenticate,
  InvalidNotificationError,
  notificationIdOf,
  parseNotification,
  type RejectionReason,
  SignatureRejectedError,
  storeNotification,
} from "./service";

/** W1, W7: 64 KiB is far above any real notification and small enough to read whole. */
export const notificationBodyLimit = 64 * 1024;

const statusReasons: Record<number, RejectionReason> = {
  413: "too_large",
  415: "unsupported_media_type",
  429: "rate_limited",
};

function rejectionReason(error: unknown): RejectionReason | undefined {
  if (error instanceof SignatureRejectedError) return `signature_${error.reason}`;
  if (error instanceof InvalidNotificationError) return error.reason;
  if (error instanceof HttpError) return statusReasons[error.status];
  return undefined;
}

type NotificationLog = {
  notification_id?: string;
  event?: string;
  order_id?: number;
  source_ip: string;
};

/**
 * The payment provider's webhook (section 8). The route reads the raw bytes itself (no body
 * parser), because the signature covers them exactly as sent, and runs the checks in W1's order:
 * size, media type, rate limit, signature, schema; only then does it touch the database.
 */
export function notificationsController(deps: PaymentsDeps) {
  const { sql, logger, metrics, tracer, topology, webhook, rateLimiter, outboxWritten } = deps;
  const counted = metrics.counter(
    "notifications_total",
    "Payment notifications by outcome (accepted, duplicate, rejected, client_closed, failed) and reason",
    ["outcome", "reason"],
  );

  const record = (
    request: Request,
    outcome: "accepted" | "duplicate" | "rejected" | "client_closed" | "failed",
    reason: string,
    fields: NotificationLog,
  ) => {
    counted.inc({ outcome, reason });
    const line = { ...requestLogFields(request), outcome, ...fields };
    if (outcome === "rejected") logger.warn("notification", { ...line, reason });
    else if (outcome === "failed") logger.error("notification", { ...line, reason });
    else logger.info("notification", line);
  };

  return new Elysia({ prefix: "/api/webhooks", detail: { tags: ["Payment notifications"] } }).post(
    "/payment",
    async ({ request, server, set }) => {
      const sourceIp = clientIp(request, server?.requestIP(request)?.address, deps.trustProxy);
      const log: NotificationLog = { source_ip: sourceIp };
      Object.assign(set.headers, rateLimiter.headers(sourceIp));
      try {
        // The cheap checks come before the body is read, so a flood costs as little as possible.
        assertContentLength(request, notificationBodyLimit);
        assertJsonContentType(request.headers.get("content-type"));
        try {
          rateLimiter.take(sourceIp);
        } finally {
          Object.assign(set.headers, rateLimiter.headers(sourceIp));
        }
        const rawBody = await readBodyWithin(request, notificationBodyLimit);
        authenticate(request.headers.get(signatureHeader), rawBody, webhook);
        const { notification, text } = parseNotification(rawBody);
        const id = notificationIdOf(notification);
        Object.assign(log, {
          notification_id: id,
          event: notification.event,
          order_id: notification.order_id,
        });
        const trace = traceOf(request);
        const stored = await inSpan(
          tracer,
          "store notification",
          { parent: trace, kind: "client", attributes: { "db.system.name": "postgresql" } },
          () =>
            storeNotification(sql, {
              id,
              notification,
              rawBody: text,
              sourceIp,
              traceparent: trace ? formatTraceparent(trace) : null,
              messageSubject: messageSubjectOf(notification.event, topology),
            }),
        );
        if (stored.outboxWritten) outboxWritten();
        record(request, stored.duplicate ? "duplicate" : "accepted", "none", log);
        return stored.duplicate
          ? { received: true as const, duplicate: true as const }
          : { received: true as const };
      } catch (error) {
        if (error instanceof ClientClosedError) {
          // N3: the provider hung up mid-body; nothing was stored and it will retry.
          record(request, "client_closed", "none", log);
          throw error;
        }
        const reason = rejectionReason(error);
        if (error instanceof InvalidNotificationError) Object.assign(log, error.partial);
        record(request, reason ? "rejected" : "failed", reason ?? "error", log);
        throw error;
      }
    },
    {
      parse: "none",
      response: { 200: received, ...problems(400, 401, 413, 415, 429, 503) },
      detail: {
        summary: "Receive a signed payment notification",
        description:
          "Checks, in order: body size (413), Content-Type application/json (415), per-source-IP " +
          "rate limit (429), X-Signature (401), JSON and schema (400). Accepted notifications are " +
          "stored with their outbox message in one transaction; a repeated notification id " +
          "answers 200 with duplicate: true and changes nothing. 503 when the database is down.",
        security: [{ paymentSignature: [] }],
        requestBody: {
          required: true,
          // TypeBox emits JSON Schema as OpenAPI 3.1 wants; the 3.0 typings differ on exclusive bounds.
          content: { "application/json": { schema: paymentNotification as object } },
        },
      },
    },
  );
}

import { notificationKey } from "@commerce/shared/contract/messages";
import { ClientClosedError, HttpError } from "@commerce/shared/platform/errors";
import {
  assertContentLength,
  assertJsonContentType,
  readBodyWithin,
} from "@commerce/shared/platform/http/body";
import { requestLogFields, traceOf } from "@commerce/shared/platform/http/request-log";
import { problems } from "@commerce/shared/platform/openapi";
import { clientIp, rateLimitKey } from "@commerce/shared/platform/rate-limit";
import { formatTraceparent, inSpan } from "@commerce/shared/platform/tracing";
import { Elysia } from "elysia";
import type { PaymentsDeps } from "../../deps";
import { notificationSubject } from "../../lib/outbox-message";
import {
  CredentialsRejectedError,
  InvalidNotificationError,
  type ParsedNotification,
  type PaymentProvider,
  type RejectionReason,
  SignatureRejectedError,
} from "../providers/provider";
import { claimedOrderId } from "../refusals/claimed-order";
import { GroupCommit, type StoreInput } from "./group-commit";

const statusReasons: Record<number, RejectionReason> = {
  413: "too_large",
  415: "unsupported_media_type",
  429: "rate_limited",
};

function rejectionReason(error: unknown): RejectionReason | undefined {
  if (error instanceof SignatureRejectedError) return `signature_${error.reason}`;
  if (error instanceof CredentialsRejectedError) return "credentials";
  if (error instanceof InvalidNotificationError) return error.reason;
  if (error instanceof HttpError) return statusReasons[error.status];
  return undefined;
}

type NotificationLog = {
  provider: string;
  notification_id?: string;
  event?: string;
  order_id?: number | null;
  source_ip: string;
  /** G4: why an accepted notification made no message. */
  ignored?: string;
};

type Outcome = "accepted" | "duplicate" | "rejected" | "client_closed" | "failed";

/**
 * The providers' webhooks (sections 9 and 15), one route per configured provider. The intake
 * reads the raw bytes itself (no body parser), because signatures cover them exactly as sent,
 * and runs the checks in W1's order: size, media type, rate limit, the provider's
 * authentication, its schema; only then does it touch the database, with the requests
 * that arrive together (`GroupCommit`).
 */
export function notificationsController(deps: PaymentsDeps, providers: PaymentProvider[]) {
  const { sql, logger, metrics, tracer, topology, rateLimiter, outboxWritten, refusals } = deps;
  const counted = metrics.counter(
    "notifications_total",
    "Payment notifications by outcome (accepted, duplicate, rejected, client_closed, failed) and reason",
    ["outcome", "reason"],
  );

  // W5, M5: concurrent requests are stored together, one statement and one commit per group.
  const group = new GroupCommit(sql, { outboxWritten });

  const record = (request: Request, outcome: Outcome, reason: string, fields: NotificationLog) => {
    counted.inc({ outcome, reason });
    const line = { ...requestLogFields(request), outcome, ...fields };
    // G4: money not the shop's is accepted (so the provider stops) but is worth a warning.
    if (outcome === "rejected") logger.warn("notification", { ...line, reason });
    else if (fields.ignored) logger.warn("notification", line);
    else if (outcome === "failed") logger.error("notification", { ...line, reason });
    else logger.info("notification", line);
  };

  const subjectOf = (notification: ParsedNotification) =>
    notificationSubject(notification, topology);

  const intake =
    (provider: PaymentProvider) => async (request: Request, sourceIp: string, bucket: string) => {
      const log: NotificationLog = { provider: provider.name, source_ip: sourceIp };
      let rawBody: Uint8Array | undefined;
      try {
        // The cheap checks come before the body is read, so a flood costs as little as possible.
        try {
          assertContentLength(request, provider.bodyLimit);
          assertJsonContentType(request.headers.get("content-type"));
        } catch (error) {
          // N21: answered first (W1), but counted against the sender like every other refusal.
          rateLimiter.spend(bucket);
          throw error;
        }
        rateLimiter.take(bucket);
        rawBody = await readBodyWithin(request, provider.bodyLimit);
        const nowSeconds = Math.floor(Date.now() / 1000);
        provider.authenticate({ headers: request.headers, rawBody, nowSeconds });
        const { text, notifications } = provider.parse(rawBody);
        const trace = traceOf(request);
        const traceparent = trace ? formatTraceparent(trace) : null;
        const inputs: StoreInput[] = notifications.map((notification) => ({
          provider: provider.name,
          notification,
          rawBody: text,
          sourceIp,
          traceparent,
          messageSubject: subjectOf(notification),
        }));
        const first = notifications[0];
        Object.assign(log, {
          notification_id: notificationKey(provider.name, first.id),
          event: first.event,
          order_id: first.orderId,
        });
        const stored = await inSpan(
          tracer,
          "store notification",
          { parent: trace, kind: "client", attributes: { "db.system.name": "postgresql" } },
          () => group.store(inputs),
        );
        // B1: a report to read is recorded (durably) before the answer, and read after it.
        const reports = notifications.flatMap((notification, index) =>
          notification.report
            ? [
                {
                  notificationKey: notificationKey(provider.name, notification.id),
                  report: notification.report,
                  fresh: stored.stored[index],
                },
              ]
            : [],
        );
        if (reports.length && deps.reportsAnnounced) await deps.reportsAnnounced(reports);
        // W9: one line per notification, so each id can be followed (T2), by its key (G5).
        notifications.forEach((notification, index) => {
          record(request, stored.stored[index] ? "accepted" : "duplicate", "none", {
            ...log,
            notification_id: notificationKey(provider.name, notification.id),
            event: notification.event,
            order_id: notification.orderId,
            ...(notification.ignored ? { ignored: notification.ignored } : {}),
          });
        });
        return provider.answer({ duplicate: stored.duplicate });
      } catch (error) {
        if (error instanceof ClientClosedError) {
          // N3: the provider hung up mid-body; nothing was stored and it will retry.
          record(request, "client_closed", "none", log);
          throw error;
        }
        const reason = rejectionReason(error);
        if (error instanceof InvalidNotificationError) Object.assign(log, error.partial);
        record(request, reason ? "rejected" : "failed", reason ?? "error", log);
        // V4: a refusal the provider will see (not 429, which only asks it to wait) is kept.
        if (reason && reason !== "rate_limited")
          refusals.add(provider.name, reason, {
            sourceIp,
            orderId: log.order_id ?? claimedOrderId(provider, rawBody),
          });
        throw error;
      }
    };

  const app = new Elysia({ prefix: "/api/webhooks", detail: { tags: ["Payment notifications"] } });
  for (const provider of providers) {
    const receive = intake(provider);
    const { document } = provider;
    app.post(
      provider.path,
      async ({ request, server, set }) => {
        const sourceIp = clientIp(request, server?.requestIP(request)?.address, deps.trustProxy);
        // N11: an IPv6 client's bucket is its /64; an IPv4-mapped address is its IPv4 address.
        const bucket = rateLimitKey(sourceIp);
        Object.assign(set.headers, rateLimiter.headers(bucket));
        try {
          const answer = await receive(request, sourceIp, bucket);
          if (answer.contentType) set.headers["content-type"] = answer.contentType;
          return answer.body as never;
        } finally {
          Object.assign(set.headers, rateLimiter.headers(bucket));
        }
      },
      {
        parse: "none",
        response: {
          200: document.answerSchema as never,
          ...problems(400, 401, 413, 415, 429, 503),
        },
        detail: {
          operationId: document.operationId,
          summary: document.summary,
          description: document.description,
          security: [{ [document.security.name]: [] }],
          requestBody: {
            required: true,
            // TypeBox emits JSON Schema as OpenAPI 3.1 wants; the 3.0 typings differ on exclusive bounds.
            content: { "application/json": { schema: document.requestSchema } },
          },
        },
      },
    );
  }
  return app;
}

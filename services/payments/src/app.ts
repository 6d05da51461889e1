import { databaseIsUp, type Sql } from "@commerce/shared/database";
import { httpPlugin } from "@commerce/shared/http";
import type { Logger } from "@commerce/shared/logger";
import type { MessageTopology } from "@commerce/shared/messages";
import type { Metrics } from "@commerce/shared/metrics";
import { openapiDocs } from "@commerce/shared/openapi";
import { opsRoutes, type ReadinessCheck } from "@commerce/shared/ops";
import type { RateLimiter } from "@commerce/shared/rate-limit";
import { Elysia } from "elysia";
import { notificationsController } from "./modules/notifications";
import type { WebhookSettings } from "./modules/notifications/service";

export type PaymentsDeps = {
  sql: Sql;
  webhook: WebhookSettings;
  /** Requests per source IP (429 past the budget). */
  rateLimiter: RateLimiter;
  /** Take the client IP from X-Forwarded-For (behind a trusted proxy only). */
  trustProxy: boolean;
  topology: MessageTopology;
  logger: Logger;
  metrics: Metrics;
  /** Readiness beyond the database, e.g. the NATS connection. */
  readiness?: ReadinessCheck[];
  /** Called after a transaction that wrote to the outbox commits, so the relay publishes now. */
  outboxWritten: () => void;
};

export function createApp(deps: PaymentsDeps) {
  // No JSON body parser here: the webhook reads and checks its raw bytes itself (W1, W2).
  return new Elysia({ normalize: false })
    .use(httpPlugin(deps))
    .use(
      openapiDocs({
        title: "Payments",
        description:
          "Receives signed payment notifications (webhooks) and publishes order-paid messages.",
        bearer: false,
      }),
    )
    .use(
      opsRoutes({
        metrics: deps.metrics,
        checks: [
          { name: "database", check: () => databaseIsUp(deps.sql) },
          ...(deps.readiness ?? []),
        ],
      }),
    )
    .use(notificationsController(deps));
}

export type App = ReturnType<typeof createApp>;

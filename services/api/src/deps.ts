import type { MessageTopology } from "@commerce/shared/contract/messages";
import type { TokenVerifier } from "@commerce/shared/platform/auth/token-verifier";
import type { Sql } from "@commerce/shared/platform/database";
import type { Logger } from "@commerce/shared/platform/logger";
import type { Metrics } from "@commerce/shared/platform/metrics";
import type { ReadinessCheck } from "@commerce/shared/platform/operational-routes";
import type { DeadOutboxSource } from "@commerce/shared/platform/outbox/dead-outbox";
import type { RateLimiter } from "@commerce/shared/platform/rate-limit";
import type { Tracer } from "@commerce/shared/platform/tracing";
import type { HoldLimits, WebhookConfig } from "./config";
import type { Database } from "./db";
import type { RefundProviders } from "./lib/refund-providers";

/** What the api's routes need; `createService` builds it, tests may replace parts of it. */
export type ApiDeps = {
  sql: Sql;
  db: Database;
  verifyToken: TokenVerifier;
  /** Requests per token subject (429 past the budget). */
  rateLimiter: RateLimiter;
  /** N11: requests without a valid token, per client address (429 past the budget). */
  rejectedLimiter: RateLimiter;
  /** N2: trusted proxies in front (TRUST_PROXY). */
  trustProxy: number;
  storeCurrency: string;
  /** Seconds until an unpaid order expires; 0 = never. */
  orderTtlSeconds: number;
  /** N5: unpaid orders and units of one tracked product a customer may hold; 0 = no limit. */
  holds: HoldLimits;
  /** U1: where the console's browser reaches the payments operator routes; undefined: it does not. */
  paymentsPublicUrl?: string;
  topology: MessageTopology;
  logger: Logger;
  metrics: Metrics;
  /** O8: the spans of requests and of the work they cause. */
  tracer: Tracer;
  /** Readiness beyond the database, e.g. the NATS connection. */
  readiness: ReadinessCheck[];
  /** X2: whether the migrations are applied; until then every route but the operational ones is 503. */
  migrated: () => boolean;
  /** N4: the scraper's bearer token for /metrics; unset, /metrics is open. */
  metricsToken?: string;
  /** Called after a transaction that wrote to the outbox commits, so the relay publishes now. */
  outboxWritten: () => void;
  /** N10: the outbox rows the relay set aside, for the operator listing. */
  deadOutbox: DeadOutboxSource;
  /** H3, H7: how outgoing webhooks are retried and where they may go. */
  webhooks: WebhookConfig;
  /** Called when deliveries became due (a retry, a test event), so the dispatcher sends now. */
  webhooksDue: () => void;
  /** F1: the providers payments refunds through (undefined: not known, e.g. NATS away). */
  refundProviders?: RefundProviders;
};

import type { MessageTopology } from "@commerce/shared/contract/messages";
import type { TokenVerifier } from "@commerce/shared/platform/auth/token-verifier";
import type { Sql } from "@commerce/shared/platform/database";
import type { Logger } from "@commerce/shared/platform/logger";
import type { Metrics } from "@commerce/shared/platform/metrics";
import type { ReadinessCheck, ReadinessNote } from "@commerce/shared/platform/operational-routes";
import type { DeadOutboxSource } from "@commerce/shared/platform/outbox/dead-outbox";
import type { RateLimiter } from "@commerce/shared/platform/rate-limit";
import type { Tracer } from "@commerce/shared/platform/tracing";
import type { ProviderSettings } from "./modules/providers";
import type { AnnouncedReport, WebhookSettings } from "./modules/providers/provider";
import type { RefusalTally } from "./modules/refusals/tally";

/** What the payments routes need; `createService` builds it, tests may replace parts of it. */
export type PaymentsDeps = {
  sql: Sql;
  webhook: WebhookSettings;
  /** G1: Stripe's and Adyen's settings; an unset one's route answers 404. */
  providers: ProviderSettings;
  /** Checks the operator routes' admin tokens; undefined without AUTH_* (those routes answer 503). */
  verifyToken: TokenVerifier | undefined;
  /** Requests per source IP (429 past the budget). */
  rateLimiter: RateLimiter;
  /** N11: the operator routes' requests, per client address (429 past the budget). */
  operatorLimiter: RateLimiter;
  /** Proxies in front that append to X-Forwarded-For (N2); 0 = the socket address is the client. */
  trustProxy: number;
  /** U1: origins allowed to read the operator routes from a browser (CORS); empty: none. */
  consoleOrigins: string[];
  topology: MessageTopology;
  logger: Logger;
  metrics: Metrics;
  /** O8: the spans of requests and of the work they cause. */
  tracer: Tracer;
  /** Readiness beyond the database, e.g. the NATS connection. */
  readiness: ReadinessCheck[];
  /** X2: whether the migrations are applied; until then every route but the operational ones is 503. */
  migrated: () => boolean;
  /** F7: what is degraded without making payments unready (a provider's open circuit). */
  readinessNotes?: ReadinessNote[];
  /** N4: the scraper's bearer token for /metrics; unset, /metrics is open. */
  metricsToken?: string;
  /** Called after a transaction that wrote to the outbox commits, so the relay publishes now. */
  outboxWritten: () => void;
  /** N10: the outbox rows the relay set aside, for the operator listing. */
  deadOutbox: DeadOutboxSource;
  /** V4: refused notifications, gathered and written in batches. */
  refusals: RefusalTally;
  /** B1: records the reports REPORT_AVAILABLE notifications named, before Adyen is answered. */
  reportsAnnounced?: (reports: AnnouncedReport[]) => Promise<void>;
};

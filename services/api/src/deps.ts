import type { TokenVerifier } from "@commerce/shared/auth/token-verifier";
import type { Sql } from "@commerce/shared/database";
import type { Logger } from "@commerce/shared/logger";
import type { MessageTopology } from "@commerce/shared/messages";
import type { Metrics } from "@commerce/shared/metrics";
import type { ReadinessCheck } from "@commerce/shared/operational-routes";
import type { RateLimiter } from "@commerce/shared/rate-limit";
import type { Tracer } from "@commerce/shared/tracing";
import type { Database } from "./db";

/** What the api's routes need; `createService` builds it, tests may replace parts of it. */
export type ApiDeps = {
  sql: Sql;
  db: Database;
  verifyToken: TokenVerifier;
  /** Requests per token subject (429 past the budget). */
  rateLimiter: RateLimiter;
  storeCurrency: string;
  /** Seconds until an unpaid order expires; 0 = never. */
  orderTtlSeconds: number;
  topology: MessageTopology;
  logger: Logger;
  metrics: Metrics;
  /** O8: the spans of requests and of the work they cause. */
  tracer: Tracer;
  /** Readiness beyond the database, e.g. the NATS connection. */
  readiness: ReadinessCheck[];
  /** Called after a transaction that wrote to the outbox commits, so the relay publishes now. */
  outboxWritten: () => void;
};

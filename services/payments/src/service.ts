import { createTokenVerifier } from "@commerce/shared/auth/token-verifier";
import { RateLimiter } from "@commerce/shared/rate-limit";
import { openServiceCore, type ServiceOptions } from "@commerce/shared/service-core";
import { createApp } from "./app";
import type { PaymentsConfig } from "./config";
import { migrations } from "./db";
import type { PaymentsDeps } from "./deps";

/**
 * The payments service's composition root: the shared core (database, NATS, outbox relay) and
 * the HTTP app. Nothing runs until `start`; `stop` undoes it in order (O7).
 */
export async function createService(
  config: PaymentsConfig,
  options: ServiceOptions<PaymentsDeps> = {},
) {
  const core = await openServiceCore("payments", config, options, {
    migrations,
    outboxSubjects: ({ payments }) => [
      payments.orderPaid,
      payments.orderRefunded,
      payments.orderFailed,
    ],
  });
  const deps: PaymentsDeps = {
    sql: core.sql,
    webhook: config.webhook,
    verifyToken: config.auth && createTokenVerifier(config.auth),
    rateLimiter: new RateLimiter(config.rateLimit),
    trustProxy: config.trustProxy,
    topology: core.topology,
    logger: core.logger,
    metrics: core.metrics,
    tracer: core.tracer,
    readiness: core.readiness,
    outboxWritten: () => core.relay.kick(),
    ...options.replace,
  };
  if (!deps.verifyToken)
    core.logger.warn(
      "operator routes answer 503: set AUTH_JWT_SECRET or AUTH_JWKS_URL to let admin tokens in",
    );
  const app = createApp(deps);

  return {
    app,
    deps,
    relay: core.relay,
    nats: core.nats,
    start: () => core.start(app),
    stop: () => core.stop(app),
  };
}

export type PaymentsService = Awaited<ReturnType<typeof createService>>;

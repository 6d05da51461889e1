import { createTokenVerifier } from "@commerce/shared/auth/token-verifier";
import { describeError } from "@commerce/shared/logger";
import { orderEventNames } from "@commerce/shared/messages";
import { RateLimiter } from "@commerce/shared/rate-limit";
import { openServiceCore, type ServiceOptions } from "@commerce/shared/service-core";
import { createApp } from "./app";
import type { ApiConfig } from "./config";
import { createDatabase, migrations } from "./db";
import type { ApiDeps } from "./deps";
import { deleteExpiredIdempotencyKeys } from "./lib/idempotency";
import { OrderExpirySweeper } from "./modules/orders/expiry";
import { ensurePaymentConsumer, PaymentConsumer } from "./modules/orders/payment-consumer";
import { registerReviewMetrics } from "./modules/reviews/service";

/**
 * The api's composition root: the shared core (database, NATS, outbox relay), the payment
 * consumer, the order expiry and Idempotency-Key sweepers and the HTTP app. Nothing runs until `start`; `stop`
 * undoes it in order (O7).
 */
export async function createService(config: ApiConfig, options: ServiceOptions<ApiDeps> = {}) {
  const core = await openServiceCore("api", config, options, {
    migrations,
    outboxSubjects: (topology) => orderEventNames.map((event) => topology.orders.event(event)),
    async onNatsConnect(jsm) {
      await ensurePaymentConsumer(jsm, core.topology);
      consumer.start();
    },
  });
  const { logger, relay } = core;
  const db = createDatabase(core.sql);
  const consumer = new PaymentConsumer({
    db,
    nats: core.nats,
    topology: core.topology,
    logger,
    metrics: core.metrics,
    tracer: core.tracer,
    outboxWritten: () => relay.kick(),
  });

  const deps: ApiDeps = {
    sql: core.sql,
    db,
    verifyToken: createTokenVerifier(config.auth),
    rateLimiter: new RateLimiter(config.rateLimit),
    storeCurrency: config.storeCurrency,
    orderTtlSeconds: config.orderTtlSeconds,
    topology: core.topology,
    logger,
    metrics: core.metrics,
    tracer: core.tracer,
    readiness: core.readiness,
    outboxWritten: () => relay.kick(),
    ...options.replace,
  };
  const app = createApp(deps);
  registerReviewMetrics(core.metrics, db);
  const expiry = new OrderExpirySweeper({
    db,
    topology: core.topology,
    logger,
    ttlSeconds: config.orderTtlSeconds,
    outboxWritten: () => relay.kick(),
  });
  let keySweeper: Timer | undefined;

  return {
    app,
    deps,
    relay,
    consumer,
    nats: core.nats,

    start() {
      core.start(app);
      expiry.start();
      // Idempotency-Keys are kept 24 hours; older ones are only taking space.
      keySweeper = setInterval(
        () =>
          deleteExpiredIdempotencyKeys(db).catch((error) =>
            logger.warn("key sweep failed", describeError(error)),
          ),
        3_600_000,
      );
    },

    stop: () =>
      core.stop(app, [
        ["idempotency key sweeper", () => clearInterval(keySweeper)],
        ["order expiry", () => expiry.stop()],
        ["payment consumer", () => consumer.stop()],
      ]),
  };
}

export type ApiService = Awaited<ReturnType<typeof createService>>;

import { orderEventNames } from "@commerce/shared/contract/messages";
import { createTokenVerifier } from "@commerce/shared/platform/auth/token-verifier";
import { describeError } from "@commerce/shared/platform/logger";
import { RateLimiter } from "@commerce/shared/platform/rate-limit";
import { openServiceCore, type ServiceOptions } from "@commerce/shared/platform/service-core";
import { createApp } from "./app";
import type { ApiConfig } from "./config";
import { createDatabase, migrations } from "./db";
import type { ApiDeps } from "./deps";
import { deleteExpiredIdempotencyKeys } from "./lib/idempotency";
import { RefundProviders } from "./lib/refund-providers";
import { OrderExpirySweeper } from "./modules/orders/expiry";
import { deleteOldOutboxRows } from "./modules/outbox/retention";
import { AppliedAnswerer } from "./modules/payment-inbox/applied-answer";
import { PaymentConsumer } from "./modules/payment-inbox/consumer";
import { ensurePaymentConsumer } from "./modules/payment-inbox/subscription";
import { registerReviewMetrics } from "./modules/reviews/service";
import { type DispatcherOptions, WebhookDispatcher } from "./modules/webhooks/dispatcher";
import { WebhookMetrics } from "./modules/webhooks/metrics";

/**
 * The api's composition root: the shared core (database, NATS, outbox relay), the payment
 * consumer, the order expiry and Idempotency-Key sweepers and the HTTP app. Nothing runs until `start`; `stop`
 * undoes it in order (O7), so in-flight requests and messages finish before NATS and the
 * database close.
 */
export async function createService(
  config: ApiConfig,
  options: ServiceOptions<ApiDeps> & { webhookDispatcher?: DispatcherOptions } = {},
) {
  const core = await openServiceCore("api", config, options, {
    migrations,
    outboxSubjects: (topology) => orderEventNames.map((event) => topology.orders.event(event)),
    async onNatsConnect(jsm) {
      // B2: payments' anti-entropy asks which notifications were applied; answered from here.
      appliedAnswerer.listen(core.nats.nc);
      await ensurePaymentConsumer(jsm, core.topology);
      consumer.start();
    },
  });
  const { logger, relay } = core;
  const appliedAnswerer = new AppliedAnswerer({
    sql: core.sql,
    topology: core.topology,
    logger,
    nats: core.nats,
  });
  const db = createDatabase(core.sql);
  const webhookMetrics = new WebhookMetrics(core.metrics, core.sql);
  const dispatcher = new WebhookDispatcher(
    { sql: core.sql, config: config.webhooks, logger, metrics: webhookMetrics },
    options.webhookDispatcher,
  );
  // A transaction that wrote order events may have written deliveries of them too.
  const eventsWritten = () => {
    relay.kick();
    dispatcher.wake("commit");
  };
  const consumer = new PaymentConsumer({
    db,
    nats: core.nats,
    topology: core.topology,
    logger,
    metrics: core.metrics,
    tracer: core.tracer,
    outboxWritten: eventsWritten,
    declare: async () => ensurePaymentConsumer(await core.nats.manager(), core.topology),
  });

  const deps: ApiDeps = {
    sql: core.sql,
    db,
    verifyToken: createTokenVerifier(config.auth),
    rateLimiter: new RateLimiter(config.rateLimit),
    rejectedLimiter: new RateLimiter(config.rateLimit),
    trustProxy: config.trustProxy,
    storeCurrency: config.storeCurrency,
    orderTtlSeconds: config.orderTtlSeconds,
    holds: config.holds,
    paymentsPublicUrl: config.paymentsPublicUrl,
    topology: core.topology,
    logger,
    metrics: core.metrics,
    tracer: core.tracer,
    readiness: core.readiness,
    migrated: core.migrated,
    metricsToken: config.metricsToken,
    outboxWritten: eventsWritten,
    deadOutbox: (limit) => relay.deadList(limit),
    webhooks: config.webhooks,
    webhooksDue: () => dispatcher.kick(),
    refundProviders: new RefundProviders({ nats: core.nats, topology: core.topology, logger }),
    ...options.replace,
  };
  const app = createApp(deps);
  registerReviewMetrics(core.metrics, db);
  const expiry = new OrderExpirySweeper({
    db,
    topology: core.topology,
    logger,
    ttlSeconds: config.orderTtlSeconds,
    outboxWritten: eventsWritten,
  });
  let keySweeper: Timer | undefined;

  return {
    app,
    deps,
    relay,
    consumer,
    dispatcher,
    webhookMetrics,
    nats: core.nats,

    start() {
      // X2: the workers start once the migrations are applied (at once, unless the database was
      // not writable at start).
      core.start(app, () => {
        expiry.start();
        dispatcher.start();
        webhookMetrics.start();
        // Idempotency-Keys are kept 24 hours; older ones are only taking space. Published order
        // events are kept OUTBOX_RETENTION_DAYS for replay-missing (H3), then go too.
        keySweeper = setInterval(() => {
          deleteExpiredIdempotencyKeys(db).catch((error) =>
            logger.warn("key sweep failed", describeError(error)),
          );
          deleteOldOutboxRows(core.sql, config.outboxRetentionDays).catch((error) =>
            logger.warn("outbox retention sweep failed", describeError(error)),
          );
        }, 3_600_000);
      });
    },

    stop: () =>
      core.stop(app, [
        ["idempotency key and outbox sweeper", () => clearInterval(keySweeper)],
        ["order expiry", () => expiry.stop()],
        ["webhook dispatcher", () => dispatcher.stop()],
        ["webhook metrics", () => webhookMetrics.stop()],
        ["payment consumer", () => consumer.stop()],
        ["applied-notifications answers", () => appliedAnswerer.stop()],
      ]),
  };
}

export type ApiService = Awaited<ReturnType<typeof createService>>;

import { describeError } from "@commerce/shared/logger";
import { RateLimiter } from "@commerce/shared/rate-limit";
import { openServiceCore, type ServiceOptions } from "@commerce/shared/service-core";
import { apiBodyLimit, createApp } from "./app";
import type { ApiConfig } from "./config";
import { createDatabase, migrations } from "./db";
import type { ApiDeps } from "./deps";
import { createTokenVerifier } from "./modules/auth/service";
import { ensureOrderPaidConsumer, OrderPaidConsumer } from "./modules/orders/order-paid-consumer";
import { deleteExpiredIdempotencyKeys } from "./modules/orders/service";

/**
 * The api's composition root: the shared core (database, NATS, outbox relay), the order-paid
 * consumer, the Idempotency-Key sweeper and the HTTP app. Nothing runs until `start`; `stop`
 * undoes it in order (O7).
 */
export async function createService(config: ApiConfig, options: ServiceOptions<ApiDeps> = {}) {
  const core = await openServiceCore("api", config, options, {
    migrations,
    outboxSubjects: (topology) => [topology.orders.paid],
    async onNatsConnect(jsm) {
      await ensureOrderPaidConsumer(jsm, core.topology);
      consumer.start();
    },
  });
  const { logger, relay } = core;
  const db = createDatabase(core.sql);
  const consumer = new OrderPaidConsumer({
    db,
    nats: core.nats,
    topology: core.topology,
    logger,
    metrics: core.metrics,
    outboxWritten: () => relay.kick(),
  });

  const deps: ApiDeps = {
    sql: core.sql,
    db,
    verifyToken: createTokenVerifier(config.auth),
    rateLimiter: new RateLimiter(config.rateLimit),
    storeCurrency: config.storeCurrency,
    topology: core.topology,
    logger,
    metrics: core.metrics,
    readiness: core.readiness,
    outboxWritten: () => relay.kick(),
    ...options.replace,
  };
  const app = createApp(deps);
  let keySweeper: Timer | undefined;

  return {
    app,
    deps,
    relay,
    consumer,
    nats: core.nats,

    start() {
      // Bun's own cap only guards memory; the app answers 413 itself below it.
      core.start(app, apiBodyLimit);
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
        ["order-paid consumer", () => consumer.stop()],
      ]),
  };
}

export type ApiService = Awaited<ReturnType<typeof createService>>;

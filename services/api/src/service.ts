import { connectDatabase, migrateSchema } from "@commerce/shared/database";
import { runSteps } from "@commerce/shared/lifecycle";
import { createLogger, describeError, type LogSink } from "@commerce/shared/logger";
import { messageTopology, streamsOf } from "@commerce/shared/messages";
import { Metrics } from "@commerce/shared/metrics";
import { ensureConsumer, ensureStream, NatsLink } from "@commerce/shared/nats";
import { OutboxRelay } from "@commerce/shared/outbox";
import { RateLimiter } from "@commerce/shared/rate-limit";
import { apiBodyLimit, createApp } from "./app";
import type { ApiConfig } from "./config";
import { createDatabase, migrations } from "./db";
import type { ApiDeps } from "./deps";
import { createTokenVerifier } from "./modules/auth/service";
import { OrderPaidConsumer } from "./modules/orders/order-paid-consumer";
import { deleteExpiredIdempotencyKeys } from "./modules/orders/service";

export type ApiServiceOptions = {
  /** Where log lines go (default stdout); tests collect them. */
  logSink?: LogSink;
  /** Database connections in the pool (default 10). */
  databasePool?: number;
  /** Parts of the routes' dependencies to replace, e.g. a dead database in a test. */
  replace?: Partial<ApiDeps>;
};

/**
 * The api's composition root: the database (migrated), NATS with its streams and the durable
 * consumer, the outbox relay, the order-paid consumer and the HTTP app. Nothing runs until
 * `start`; `stop` undoes it in order (O7).
 */
export async function createService(config: ApiConfig, options: ApiServiceOptions = {}) {
  const logger = createLogger(config.logLevel, { service: "api" }, options.logSink);
  const metrics = new Metrics();
  const topology = messageTopology(config.natsPrefix);
  const sql = connectDatabase(config.databaseUrl, { max: options.databasePool });
  await migrateSchema(sql, { schema: "api", migrations });
  const db = createDatabase(sql);

  const nats = new NatsLink(config.natsUrl, "api", logger, async (link) => {
    const jsm = await link.manager();
    for (const stream of streamsOf(topology)) await ensureStream(jsm, stream);
    await ensureConsumer(jsm, {
      stream: topology.payments.stream,
      durable: topology.orderPaidConsumer,
      filterSubject: topology.payments.orderPaid,
      ackWaitMs: 30_000,
    });
    consumer.start();
    relay.kick();
  });
  const relay = new OutboxRelay({
    sql,
    schema: "api",
    subjects: [topology.orders.paid],
    jetstream: () => nats.jetstream(),
    logger,
    metrics,
  });
  const consumer = new OrderPaidConsumer({
    db,
    nats,
    topology,
    logger,
    metrics,
    outboxWritten: () => relay.kick(),
  });

  const deps: ApiDeps = {
    sql,
    db,
    verifyToken: createTokenVerifier(config.auth),
    rateLimiter: new RateLimiter(config.rateLimit),
    storeCurrency: config.storeCurrency,
    topology,
    logger,
    metrics,
    readiness: [{ name: "nats", check: () => nats.isUp }],
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
    nats,

    /** Listens on `config.port`, connects to NATS in the background and starts the relay. */
    start() {
      // Bun's own cap only guards memory; the app answers 413 itself below it.
      app.listen({ port: config.port, hostname: "0.0.0.0", maxRequestBodySize: apiBodyLimit });
      logger.info("api listening", { port: app.server?.port });
      void nats.start().catch((error) => logger.error("nats connect failed", describeError(error)));
      relay.start();
      // Idempotency-Keys are kept 24 hours; older ones are only taking space.
      keySweeper = setInterval(
        () =>
          deleteExpiredIdempotencyKeys(db).catch((error) =>
            logger.warn("key sweep failed", describeError(error)),
          ),
        3_600_000,
      );
    },

    /** Stops accepting, finishes in-flight work, drains NATS and closes the database. */
    stop: () =>
      runSteps(logger, [
        ["http", () => (app.server ? app.stop() : undefined)],
        ["idempotency key sweeper", () => clearInterval(keySweeper)],
        ["order-paid consumer", () => consumer.stop()],
        ["outbox relay", () => relay.stop()],
        ["nats", () => nats.close()],
        ["database", () => sql.end({ timeout: 5 })],
      ]),
  };
}

export type ApiService = Awaited<ReturnType<typeof createService>>;

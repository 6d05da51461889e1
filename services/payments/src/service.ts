import { connectDatabase, migrateSchema } from "@commerce/shared/database";
import { runSteps } from "@commerce/shared/lifecycle";
import { createLogger, describeError, type LogSink } from "@commerce/shared/logger";
import { messageTopology, streamsOf } from "@commerce/shared/messages";
import { Metrics } from "@commerce/shared/metrics";
import { ensureStream, NatsLink } from "@commerce/shared/nats";
import { OutboxRelay } from "@commerce/shared/outbox";
import { RateLimiter } from "@commerce/shared/rate-limit";
import { createApp } from "./app";
import type { PaymentsConfig } from "./config";
import { migrations } from "./db";
import type { PaymentsDeps } from "./deps";

export type PaymentsServiceOptions = {
  /** Where log lines go (default stdout); tests collect them. */
  logSink?: LogSink;
  /** Database connections in the pool (default 10). */
  databasePool?: number;
  /** Parts of the routes' dependencies to replace, e.g. a frozen rate limiter in a test. */
  replace?: Partial<PaymentsDeps>;
};

/** Bun's own cap on a request body, far above the webhook's limit: it only guards memory. */
const serverBodyCap = 1024 * 1024;

/**
 * The payments service's composition root: the database (migrated), NATS with its streams, the
 * outbox relay and the HTTP app. Nothing runs until `start`; `stop` undoes it in order (O7).
 */
export async function createService(config: PaymentsConfig, options: PaymentsServiceOptions = {}) {
  const logger = createLogger(config.logLevel, { service: "payments" }, options.logSink);
  const metrics = new Metrics();
  const topology = messageTopology(config.natsPrefix);
  const sql = connectDatabase(config.databaseUrl, { max: options.databasePool });
  await migrateSchema(sql, { schema: "payments", migrations });

  const nats = new NatsLink(config.natsUrl, "payments", logger, async (link) => {
    const jsm = await link.manager();
    for (const stream of streamsOf(topology)) await ensureStream(jsm, stream);
    relay.kick();
  });
  const relay = new OutboxRelay({
    sql,
    schema: "payments",
    subjects: [topology.payments.orderPaid],
    jetstream: () => nats.jetstream(),
    logger,
    metrics,
  });

  const deps: PaymentsDeps = {
    sql,
    webhook: config.webhook,
    rateLimiter: new RateLimiter(config.rateLimit),
    trustProxy: config.trustProxy,
    topology,
    logger,
    metrics,
    readiness: [{ name: "nats", check: () => nats.isUp }],
    outboxWritten: () => relay.kick(),
    ...options.replace,
  };
  const app = createApp(deps);

  return {
    app,
    deps,
    relay,
    nats,

    /** Listens on `config.port`, connects to NATS in the background and starts the relay. */
    start() {
      app.listen({ port: config.port, hostname: "0.0.0.0", maxRequestBodySize: serverBodyCap });
      logger.info("payments listening", { port: app.server?.port });
      void nats.start().catch((error) => logger.error("nats connect failed", describeError(error)));
      relay.start();
    },

    /** Stops accepting, finishes in-flight work, drains NATS and closes the database. */
    stop: () =>
      runSteps(logger, [
        ["http", () => (app.server ? app.stop() : undefined)],
        ["outbox relay", () => relay.stop()],
        ["nats", () => nats.close()],
        ["database", () => sql.end({ timeout: 5 })],
      ]),
  };
}

export type PaymentsService = Awaited<ReturnType<typeof createService>>;

import type { MigrationMeta } from "drizzle-orm/migrator";
import type { JetStreamManager } from "nats";
import type { readCommonConfig } from "./config";
import { connectDatabase, migrateSchema } from "./database";
import { runSteps } from "./lifecycle";
import { createLogger, describeError, type LogSink } from "./logger";
import { type MessageTopology, messageTopology, streamsOf } from "./messages";
import { Metrics } from "./metrics";
import { ensureStream, NatsLink, StreamReplicasError } from "./nats";
import type { ReadinessCheck } from "./operational-routes";
import { OutboxRelay } from "./outbox";
import { createTracer } from "./tracing";

export type ServiceOptions<Deps> = {
  /** Where log lines go (default stdout); tests collect them. */
  logSink?: LogSink;
  /** Database connections in the pool (default 10). */
  databasePool?: number;
  /** Parts of the routes' dependencies to replace, e.g. a dead database in a test. */
  replace?: Partial<Deps>;
};

/** What `start` and `stop` need of an Elysia app. */
type Server = {
  listen(options: { port: number; hostname: string; maxRequestBodySize: number }): unknown;
  stop(): Promise<unknown> | unknown;
  server: { port?: number } | null;
};

type Step = [string, () => Promise<unknown> | unknown];

/**
 * Bun's own cap on a request body, far above either app's limit (api 16 KiB, payments 64 KiB),
 * so a body over the app's limit gets the app's 413 problem+json, logged and counted (N7). The cap
 * only guards memory: a body declared over 1 MiB gets Bun's bare 413 before the app sees it.
 */
export const serverBodyCap = 1024 * 1024;

/**
 * What both services are built on: the logger and metrics, the database with the service's
 * migrations applied, the NATS link that declares both streams on every (re)connect, and the
 * outbox relay of the service's own subjects, and the tracer (O8). Each `createService` adds its
 * own parts.
 */
export async function openServiceCore(
  name: "api" | "payments",
  config: ReturnType<typeof readCommonConfig>,
  options: ServiceOptions<unknown>,
  parts: {
    migrations: MigrationMeta[];
    outboxSubjects: (topology: MessageTopology) => string[];
    /** More to declare or start once NATS is connected, e.g. a durable consumer. */
    onNatsConnect?: (jsm: JetStreamManager) => Promise<void>;
  },
) {
  const logger = createLogger(config.logLevel, { service: name }, options.logSink);
  const metrics = new Metrics();
  const tracer = await createTracer(name, config.otlpEndpoint);
  const topology = messageTopology(config.natsPrefix);
  const sql = connectDatabase(config.databaseUrl, { max: options.databasePool });
  await migrateSchema(sql, { schema: name, migrations: parts.migrations });

  const nats = new NatsLink(
    config.natsUrl,
    name,
    logger,
    async (link) => {
      const jsm = await link.manager();
      for (const stream of streamsOf(topology))
        await ensureStream(jsm, { ...stream, replicas: config.streamReplicas }).catch((error) => {
          // X1: a stream that exists works with its old replica count, so carry on; a stream the
          // server would not create fails the setup, which NatsLink logs and tries again.
          if (!(error instanceof StreamReplicasError && error.kept !== undefined)) throw error;
          logger.error("nats stream replicas not changed", {
            stream: stream.name,
            ...describeError(error),
          });
        });
      await parts.onNatsConnect?.(jsm);
      relay.kick();
    },
    config.natsCredentials,
  );
  const relay = new OutboxRelay({
    sql,
    schema: name,
    subjects: parts.outboxSubjects(topology),
    jetstream: () => nats.jetstream(),
    logger,
    metrics,
    tracer,
  });
  const readiness: ReadinessCheck[] = [{ name: "nats", check: () => nats.isUp }];

  return {
    logger,
    metrics,
    tracer,
    topology,
    sql,
    nats,
    relay,
    readiness,

    /** Listens on `config.port`, connects to NATS in the background and starts the relay. */
    start(app: Server) {
      app.listen({ port: config.port, hostname: "0.0.0.0", maxRequestBodySize: serverBodyCap });
      logger.info(`${name} listening`, { port: app.server?.port });
      void nats.start().catch((error) => logger.error("nats connect failed", describeError(error)));
      relay.start();
    },

    /** Stops accepting, runs the service's own steps, then the relay, NATS and the database (O7). */
    stop: (app: Server, steps: Step[] = []) =>
      runSteps(logger, [
        ["http", () => (app.server ? app.stop() : undefined)],
        ...steps,
        ["outbox relay", () => relay.stop()],
        ["nats", () => nats.close()],
        ["database", () => sql.end({ timeout: 5 })],
        ["tracing", () => tracer.shutdown()],
      ]),
  };
}

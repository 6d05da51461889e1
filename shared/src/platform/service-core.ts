import type { MigrationMeta } from "drizzle-orm/migrator";
import type { JetStreamManager } from "nats";
import { type MessageTopology, messageTopology, ownStreamOf } from "../contract/messages";
import type { CommonConfig } from "./config";
import { connectDatabase, startRefusal } from "./database";
import { uncaughtErrorAnswer } from "./http/problems";
import { serverBodyCap } from "./http/request-limits";
import { logOutput } from "./log-output";
import { createLogger, describeError, type Logger, type LogSink } from "./logger";
import { Metrics } from "./metrics";
import { MigrationsUntilDone } from "./migrations-until-done";
import { ensureStream, NatsLink, StreamReplicasError } from "./nats";
import type { ReadinessCheck } from "./operational-routes";
import { OutboxRelay } from "./outbox/relay";
import { runSteps, StartFailed } from "./process-exit";
import { productionMode } from "./production-mode";
import { createTracer } from "./tracing";

export type ServiceOptions<Deps> = {
  /** Where log lines go (default stdout, bounded: `logOutput`); tests collect them. */
  logSink?: LogSink;
  /** Database connections in the pool (default 10). */
  databasePool?: number;
  /** Parts of the routes' dependencies to replace, e.g. a dead database in a test. */
  replace?: Partial<Deps>;
};

/** What `start` and `stop` need of an Elysia app. */
type Server = {
  listen(options: {
    port: number;
    hostname: string;
    maxRequestBodySize: number;
    development: boolean;
    error: (error: Error) => Response;
  }): unknown;
  stop(): Promise<unknown> | unknown;
  server: { port?: number } | null;
};

type Step = [string, () => Promise<unknown> | unknown];

/**
 * What both services ask of Bun's server besides the address: no cap of its own on a body (N7),
 * and never its development error page (stack, paths, source lines), whatever NODE_ENV says:
 * an error no route caught is problem+json, logged and counted (E5).
 */
export const serverOptions = (logger: Logger, metrics: Metrics) => ({
  maxRequestBodySize: serverBodyCap,
  development: false,
  error: uncaughtErrorAnswer({ logger, metrics }),
});

/**
 * What both services are built on: the logger and metrics, the database with the service's
 * migrations applied, the NATS link that declares the service's own stream on every (re)connect
 * (N1: the api `ORDERS`, payments `PAYMENTS`), and the
 * outbox relay of the service's own subjects, and the tracer (O8). Each `createService` adds its
 * own parts.
 */
export async function openServiceCore(
  name: "api" | "payments",
  config: CommonConfig,
  options: ServiceOptions<unknown>,
  parts: {
    migrations: MigrationMeta[];
    outboxSubjects: (topology: MessageTopology) => string[];
    /** More to declare or start once NATS is connected, e.g. a durable consumer. */
    onNatsConnect?: (jsm: JetStreamManager) => Promise<void>;
  },
) {
  const metrics = new Metrics();
  const dropped = metrics.counter(
    "log_lines_dropped_total",
    "Log lines dropped because stdout did not keep up (a stalled log reader)",
  );
  const sink = options.logSink ?? logOutput({ onDrop: () => dropped.inc() }).write;
  const logger = createLogger(config.logLevel, { service: name }, sink);
  const tracer = await createTracer(name, config.otlpEndpoint);
  const topology = messageTopology(config.natsPrefix);
  const sql = connectDatabase(config.databaseUrl, { max: options.databasePool, schema: name });
  const migrations = new MigrationsUntilDone(sql, name, parts.migrations, logger);
  await migrations.firstAttempt().catch((error) => {
    // An unreachable or read-only database is waited for (X2); anything else stops the start,
    // said in one line (O6).
    logger.error(
      `${name} cannot start: ${startRefusal(error) ?? "applying its migrations failed"}`,
      {
        ...describeError(error),
      },
    );
    throw new StartFailed("start failed");
  });

  const nats = new NatsLink(
    config.natsUrl,
    name,
    logger,
    async (link) => {
      const jsm = await link.manager();
      const stream = ownStreamOf(topology, name);
      await ensureStream(jsm, { ...stream, replicas: config.streamReplicas }).catch((error) => {
        // X1: a stream that exists works with its old replica count, so carry on; a stream the
        // server would not create fails the setup, which NatsLink logs and tries again.
        if (!(error instanceof StreamReplicasError && error.kept !== undefined)) throw error;
        logger.error("nats stream replicas not changed", {
          stream: stream.name,
          ...describeError(error),
        });
      });
      // The own stream is there: the relay need not wait for the rest (the api's consumer waits
      // for the payments service's stream).
      relay.kick();
      await parts.onNatsConnect?.(jsm);
    },
    config.natsCredentials,
    // N1: replies to this service arrive under its own prefix, which only its NATS user may read.
    `_INBOX_${name}`,
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
  const readiness: ReadinessCheck[] = [
    { name: "nats", check: () => nats.isUp },
    { name: "migrations", check: () => migrations.done },
  ];

  return {
    logger,
    metrics,
    tracer,
    topology,
    sql,
    nats,
    relay,
    readiness,
    /** X2: whether the migrations are applied (the request pipeline answers 503 until they are). */
    migrated: () => migrations.done,

    /**
     * Listens on `config.host`:`config.port` (N12); once the migrations are applied (at once,
     * unless the database was unreachable or read-only at start: X2), connects to NATS, starts
     * the relay and runs `background` (the service's own workers). Until then every route but
     * the operational ones answers 503 (the request pipeline's migration gate).
     */
    start(app: Server, background?: () => void) {
      app.listen({ port: config.port, hostname: config.host, ...serverOptions(logger, metrics) });
      logger.info(`${name} listening`, {
        host: config.host,
        port: app.server?.port,
        mode: productionMode ? "production" : "development",
      });
      void migrations.applied.then(() => {
        if (migrations.stopped) return;
        void nats
          .start()
          .catch((error) => logger.error("nats connect failed", describeError(error)));
        relay.start();
        background?.();
      });
    },

    /**
     * Stops accepting, runs the service's own steps, then the relay, NATS and the database (O7):
     * in that order, so work still in flight has its connections until it is done.
     */
    stop: (app: Server, steps: Step[] = []) =>
      runSteps(logger, [
        ["migrations", () => migrations.stop()],
        ["http", () => (app.server ? app.stop() : undefined)],
        ...steps,
        ["outbox relay", () => relay.stop()],
        ["nats", () => nats.close()],
        ["database", () => sql.end({ timeout: 5 })],
        ["tracing", () => tracer.shutdown()],
      ]),
  };
}

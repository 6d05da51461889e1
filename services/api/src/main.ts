import { connectDatabase, migrateSchema } from "@commerce/shared/database";
import { configOrExit, healthcheckIfAsked, onShutdown } from "@commerce/shared/lifecycle";
import { createLogger, describeError } from "@commerce/shared/logger";
import { messageTopology, streamsOf } from "@commerce/shared/messages";
import { Metrics } from "@commerce/shared/metrics";
import { ensureConsumer, ensureStream, NatsLink } from "@commerce/shared/nats";
import { OutboxRelay } from "@commerce/shared/outbox";
import { RateLimiter } from "@commerce/shared/rate-limit";
import { apiBodyLimit, createApp } from "./app";
import { loadConfig } from "./config";
import { createDatabase, migrations } from "./db";
import { createTokenVerifier } from "./modules/auth/service";
import { OrderPaidConsumer } from "./modules/orders/order-paid-consumer";
import { deleteExpiredIdempotencyKeys } from "./modules/orders/service";

await healthcheckIfAsked(3000);
const config = configOrExit(() => loadConfig(process.env));
const logger = createLogger(config.logLevel, { service: "api" });
const metrics = new Metrics();
const topology = messageTopology(config.natsPrefix);

const sql = connectDatabase(config.databaseUrl);
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

const app = createApp({
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
});

app.listen({ port: config.port, hostname: "0.0.0.0", maxRequestBodySize: apiBodyLimit });
logger.info("api listening", { port: app.server?.port });
void nats.start().catch((error) => logger.error("nats connect failed", { error: String(error) }));
relay.start();
// R2 keeps Idempotency-Keys for 24 hours; older ones are only taking space.
const keySweeper = setInterval(
  () =>
    deleteExpiredIdempotencyKeys(db).catch((error) =>
      logger.warn("key sweep failed", describeError(error)),
    ),
  3_600_000,
);

onShutdown(logger, [
  ["http", () => app.stop()],
  ["idempotency key sweeper", () => clearInterval(keySweeper)],
  ["order-paid consumer", () => consumer.stop()],
  ["outbox relay", () => relay.stop()],
  ["nats", () => nats.close()],
  ["database", () => sql.end({ timeout: 5 })],
]);

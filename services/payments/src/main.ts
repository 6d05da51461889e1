import { connectDatabase, migrateSchema } from "@commerce/shared/database";
import { configOrExit, healthcheckIfAsked, onShutdown } from "@commerce/shared/lifecycle";
import { createLogger } from "@commerce/shared/logger";
import { messageTopology, streamsOf } from "@commerce/shared/messages";
import { Metrics } from "@commerce/shared/metrics";
import { ensureStream, NatsLink } from "@commerce/shared/nats";
import { OutboxRelay } from "@commerce/shared/outbox";
import { RateLimiter } from "@commerce/shared/rate-limit";
import { createApp } from "./app";
import { loadConfig } from "./config";
import { migrations } from "./db";

await healthcheckIfAsked(3001);
const config = configOrExit(() => loadConfig(process.env));
const logger = createLogger(config.logLevel, { service: "payments" });
const metrics = new Metrics();
const topology = messageTopology(config.natsPrefix);

const sql = connectDatabase(config.databaseUrl);
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

const app = createApp({
  sql,
  webhook: config.webhook,
  rateLimiter: new RateLimiter(config.rateLimit),
  trustProxy: config.trustProxy,
  topology,
  logger,
  metrics,
  readiness: [{ name: "nats", check: () => nats.isUp }],
  outboxWritten: () => relay.kick(),
});

app.listen({ port: config.port, hostname: "0.0.0.0", maxRequestBodySize: 1024 * 1024 });
logger.info("payments listening", { port: app.server?.port });
void nats.start().catch((error) => logger.error("nats connect failed", { error: String(error) }));
relay.start();

onShutdown(logger, [
  ["http", () => app.stop()],
  ["outbox relay", () => relay.stop()],
  ["nats", () => nats.close()],
  ["database", () => sql.end({ timeout: 5 })],
]);

/**
 * The payments service wired as services/payments/src/main.ts wires it (outbox relay and NATS
 * included), with one cost switched off or changed, for bench/profile.ts. BENCH_VARIANT is a
 * comma-separated list of:
 *   nolog     LOG_LEVEL=warn: no request or notification log lines
 *   pool=N    N database connections instead of 10
 */
import { connectDatabase } from "@commerce/shared/database";
import { createLogger } from "@commerce/shared/logger";
import { messageTopology, streamsOf } from "@commerce/shared/messages";
import { Metrics } from "@commerce/shared/metrics";
import { ensureStream, NatsLink } from "@commerce/shared/nats";
import { OutboxRelay } from "@commerce/shared/outbox";
import { RateLimiter } from "@commerce/shared/rate-limit";
import { createApp } from "../services/payments/src/app";
import { loadConfig } from "../services/payments/src/config";

const switches = new Set((process.env.BENCH_VARIANT ?? "").split(",").filter(Boolean));
const pool = Number([...switches].find((s) => s.startsWith("pool="))?.slice(5) ?? 10);
const config = loadConfig(process.env);
const logger = createLogger(switches.has("nolog") ? "warn" : config.logLevel, {
  service: "payments",
});
const topology = messageTopology(config.natsPrefix);
const sql = connectDatabase(config.databaseUrl, { max: pool });

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
});
const app = createApp({
  sql,
  webhook: config.webhook,
  rateLimiter: new RateLimiter(config.rateLimit),
  trustProxy: config.trustProxy,
  topology,
  logger,
  metrics: new Metrics(),
  readiness: [{ name: "nats", check: () => nats.isUp }],
  outboxWritten: () => relay.kick(),
});
app.listen({ port: config.port, hostname: "127.0.0.1", maxRequestBodySize: 1024 * 1024 });
await nats.start();
relay.start();

const stop = async () => {
  await app.stop();
  await relay.stop();
  await nats.close();
  await sql.end({ timeout: 2 });
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());

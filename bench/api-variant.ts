/**
 * The api's HTTP app wired as services/api/src/main.ts wires it (no NATS consumer or relay, which
 * are idle during reads), with one cost switched off or changed, to measure what that cost is
 * under wrk without touching the service code. bench/profile.ts runs it; BENCH_VARIANT is a
 * comma-separated list of:
 *   nolog       LOG_LEVEL=warn: no request log line
 *   tokencache  verified tokens remembered until they expire (jose runs once per token)
 *   prepared    drizzle's queries sent as named prepared statements (one round trip, no re-parse)
 *   nometrics   request counter and histogram are no-ops
 *   pool=N      N database connections instead of 10
 */
import { connectDatabase } from "@commerce/shared/database";
import { createLogger } from "@commerce/shared/logger";
import { messageTopology } from "@commerce/shared/messages";
import { Metrics } from "@commerce/shared/metrics";
import { RateLimiter } from "@commerce/shared/rate-limit";
import { apiBodyLimit, createApp } from "../services/api/src/app";
import { loadConfig } from "../services/api/src/config";
import { createDatabase } from "../services/api/src/db";
import { createTokenVerifier, type TokenVerifier } from "../services/api/src/modules/auth/service";
import { preparing } from "./prepared";

const switches = new Set((process.env.BENCH_VARIANT ?? "").split(",").filter(Boolean));
const pool = Number([...switches].find((s) => s.startsWith("pool="))?.slice(5) ?? 10);
const config = loadConfig(process.env);
const logger = createLogger(switches.has("nolog") ? "warn" : config.logLevel, { service: "api" });
const metrics = new Metrics();
if (switches.has("nometrics")) {
  metrics.httpRequests.inc = () => {};
  metrics.httpDuration.observe = () => {};
}

const sql = connectDatabase(config.databaseUrl, { max: pool });
const db = createDatabase(switches.has("prepared") ? preparing(sql) : sql);

function cached(verify: TokenVerifier): TokenVerifier {
  const known = new Map<string, { principal: Awaited<ReturnType<TokenVerifier>>; until: number }>();
  return async (token) => {
    const hit = known.get(token);
    if (hit && hit.until > Date.now()) return hit.principal;
    const principal = await verify(token);
    const [, payload] = token.split(".");
    const exp = Number(JSON.parse(Buffer.from(payload, "base64url").toString()).exp) * 1000;
    if (known.size > 100_000) known.clear();
    known.set(token, { principal, until: exp });
    return principal;
  };
}
const verifier = createTokenVerifier(config.auth);

const app = createApp({
  sql,
  db,
  verifyToken: switches.has("tokencache") ? cached(verifier) : verifier,
  rateLimiter: new RateLimiter(config.rateLimit),
  storeCurrency: config.storeCurrency,
  topology: messageTopology(config.natsPrefix),
  logger,
  metrics,
  outboxWritten: () => {},
});
app.listen({ port: config.port, hostname: "127.0.0.1", maxRequestBodySize: apiBodyLimit });

const stop = async () => {
  // What the memory is made of, for bench/profile.ts memory: JS heap vs the rest of the RSS.
  const { heapStats } = await import("bun:jsc");
  Bun.gc(true);
  const heap = heapStats();
  const mib = (bytes: number) => Math.round(bytes / 104857.6) / 10;
  const usage = process.memoryUsage();
  process.stderr.write(
    `${JSON.stringify({
      rss_mib: mib(usage.rss),
      heap_size_mib: mib(heap.heapSize),
      heap_capacity_mib: mib(heap.heapCapacity),
      extra_memory_mib: mib(heap.extraMemorySize),
      array_buffers_mib: mib(usage.arrayBuffers),
      object_count: heap.objectCount,
      top_types: Object.entries(heap.objectTypeCounts)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 8),
    })}\n`,
  );
  await app.stop();
  await sql.end({ timeout: 2 });
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());

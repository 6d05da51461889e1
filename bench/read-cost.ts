/**
 * Where the api's CPU goes on a read: the api from source under Bun's profiler, loaded by wrk with
 * the bench's own script (one product or a list page), then its samples after the warm-up summed
 * by component (Elysia, drizzle, the driver, the logger, ...), each sample going to the nearest
 * frame of its stack that belongs to one. Also the api's CPU per request (from /proc, not the
 * profile), which is what the read rows of `npm run bench` compare with the floor.
 *
 *   npx bun bench/read-cost.ts product|list [seconds] [api|floor|binary]   # DATABASE_URL or the bench's
 *     database (`bench`), migrated by an `npm run bench` before
 *   READ_COST_ENV='LOG_LEVEL=warn RATE_LIMIT_RPS=0' npx bun bench/read-cost.ts product   # ablations
 *   READ_COST_PROFILE=0 ...    # CPU per request alone, without the profiler's own cost
 */
import { readdirSync, readFileSync } from "node:fs";
import { launch } from "@commerce/testing/launch";
import postgres from "postgres";
import { loadCatalog, pagesPerCategory, writeDataFiles } from "./data";
import {
  databaseUrl,
  ensureDatabase,
  jwtSecret,
  makeRunDir,
  natsUrl,
  readConnections,
  say,
} from "./harness";
import { cpuTicks } from "./machine";

const [read = "product", secondsText = "15", target = "api"] = process.argv.slice(2);
const seconds = Number(secondsText);
const profile = process.env.READ_COST_PROFILE !== "0";
const dir = makeRunDir(`read-cost-${crypto.randomUUID().slice(0, 8)}`);
const extraEnv = Object.fromEntries(
  (process.env.READ_COST_ENV ?? "")
    .split(/\s+/)
    .filter(Boolean)
    .map((pair) => pair.split("=", 2) as [string, string]),
);

await ensureDatabase();
const sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
await writeDataFiles(dir, await loadCatalog(sql));
await sql.end();

const launched = performance.now();
const api = await launch({
  name: "api",
  // `binary`: the compiled api of `npm run build`, as `npm run bench` runs it (no profile).
  command:
    target === "binary"
      ? ["dist/api"]
      : [
          process.execPath,
          "--no-env-file",
          ...(profile ? ["--cpu-prof", `--cpu-prof-dir=${dir}`] : []),
          target === "floor" ? "bench/floor.ts" : "services/api/src/main.ts",
        ],
  env: {
    DATABASE_URL: databaseUrl,
    NATS_URL: natsUrl,
    NATS_PREFIX: `readcost${crypto.randomUUID().slice(0, 8)}`,
    AUTH_JWT_SECRET: jwtSecret,
    LOG_LEVEL: "info",
    ...extraEnv,
  },
  output: { dir, stdout: true },
});

const script = read === "list" ? "list.lua" : "product.lua";
const args = read === "list" ? [dir, String(pagesPerCategory)] : [dir];
function wrk(duration: number) {
  const run = Bun.spawnSync([
    "wrk",
    "-t2",
    `-c${readConnections}`,
    `-d${duration}s`,
    "-s",
    `bench/wrk/${script}`,
    api.url,
    "--",
    ...args,
  ]);
  const line = run.stdout
    .toString()
    .split("\n")
    .find((l) => l.startsWith("BENCH "));
  if (!line) throw new Error(`wrk failed: ${run.stderr}`);
  const result = JSON.parse(line.slice(6));
  if (result.errors_status) throw new Error(`${result.errors_status} answers were not 2xx`);
  return result as { requests: number; duration_us: number };
}

say(`${read}: warm-up`);
wrk(3);
const measuredFrom = performance.now() - launched;
const ticks = cpuTicks(api.pid);
const measured = wrk(seconds);
const cpuUs = ((cpuTicks(api.pid) - ticks) * 10_000) / measured.requests;
await api.stop("SIGTERM", 15_000);

type Node = {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
};
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[] };

/** Which component a frame belongs to, if any: by its file, else by a native function's name. */
function componentOf({ functionName, url, lineNumber }: Node["callFrame"]): string | undefined {
  const byFile: [RegExp, string][] = [
    [
      /node_modules\/elysia\/|node_modules\/exact-mirror\//,
      "Elysia (routing, hooks, validation, response)",
    ],
    [/node_modules\/@sinclair\/typebox\//, "Elysia (routing, hooks, validation, response)"],
    [/node_modules\/drizzle-orm\//, "drizzle (query run, row mapping)"],
    [/node_modules\/postgres\//, "postgres.js driver"],
    [/bench\/floor\.ts/, "the floor's route"],
    [/node_modules\/prom-client\/|platform\/metrics\.ts/, "metrics (prom-client)"],
    [/platform\/logger\.ts|platform\/log-output\.ts/, "logger line"],
    [/platform\/tracing\.ts/, "trace/span ids"],
    [/http\/request-log\.ts/, "request log hook (id, span, metric, log fields)"],
    [/platform\/rate-limit\.ts/, "rate limiter"],
    [
      /platform\/auth\/|modules\/auth\/|node_modules\/jose\//,
      "auth (bearer, verified-token cache)",
    ],
    [/http\/url-text\.ts|http\/fields\.ts/, "URL text check (N9)"],
    [/lib\/json-body\.ts|http\/body\.ts/, "body checks (no body on a GET)"],
    [/http\/problems\.ts|platform\/errors\.ts/, "problem+json"],
    [/services\/api\/src\//, "the route's own code (service, list page)"],
    [/node_modules\/nats\/|platform\/nats\.ts|contract\/outbox\.ts/, "NATS, outbox (background)"],
  ];
  for (const [pattern, name] of byFile) if (pattern.test(url)) return name;
  if (functionName === "(garbage collector)") return "garbage collector";
  if (functionName === "json" || functionName === "stringify") return "JSON of the response";
  if (functionName === "processTicksAndRejections")
    return "Bun: promise jobs, Bun.serve's answer (native)";
  // Code made with `new Function` has no file: Elysia compiles each route's handler so.
  if (url === "" && lineNumber >= 0) return "Elysia (routing, hooks, validation, response)";
  return undefined;
}

const file = readdirSync(dir).find((name) => name.endsWith(".cpuprofile"));
const rows: [string, number][] = [];
if (profile && file) {
  const data = JSON.parse(readFileSync(`${dir}/${file}`, "utf8")) as Profile;
  const byId = new Map(data.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of data.nodes)
    for (const child of node.children ?? []) parent.set(child, node.id);
  const component = new Map<number, string>();
  const resolve = (id: number): string => {
    const known = component.get(id);
    if (known) return known;
    const node = byId.get(id) as Node;
    const own = componentOf(node.callFrame);
    const up = parent.get(id);
    const found =
      own ??
      (up === undefined
        ? node.callFrame.functionName === "(program)"
          ? "outside JavaScript (Bun.serve's HTTP, sockets, event loop)"
          : "other"
        : resolve(up));
    component.set(id, found);
    return found;
  };
  const counts = new Map<string, number>();
  let at = 0;
  let total = 0;
  for (let i = 0; i < data.samples.length; i++) {
    at += data.timeDeltas[i] / 1000;
    if (at < measuredFrom) continue;
    const name = resolve(data.samples[i]);
    if (name.startsWith("NATS")) continue;
    counts.set(name, (counts.get(name) ?? 0) + 1);
    total++;
  }
  for (const [name, count] of [...counts].sort((a, b) => b[1] - a[1]))
    rows.push([name, count / total]);
}
console.log(
  JSON.stringify({
    read,
    env: extraEnv,
    rps: Math.round(measured.requests / (measured.duration_us / 1e6)),
    cpu_us_per_request: Math.round(cpuUs),
    profile: dir,
  }),
);
for (const [name, share] of rows)
  console.log(
    `| ${name} | ${(share * 100).toFixed(1)}% | ${((share * cpuUs) | 0).toString()} µs |`,
  );

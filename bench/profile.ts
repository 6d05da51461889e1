/**
 * Where the time goes (docs/benchmarks.md). Not part of `npm run bench`; each mode takes 1-4 min.
 *
 *   npx bun bench/profile.ts cpu api product      # CPU profile of a service from source under wrk
 *   npx bun bench/profile.ts cpu api list
 *   npx bun bench/profile.ts cpu api order
 *   npx bun bench/profile.ts cpu payments webhook
 *   npx bun bench/profile.ts variants api          # the api with one cost removed at a time
 *   npx bun bench/profile.ts variants payments     # the same for the webhook
 *   npx bun bench/profile.ts micro                 # single costs in isolation, µs per call
 *   npx bun bench/profile.ts memory                # binaries' resident memory, with and without --smol
 *
 * `cpu` runs `bun --cpu-prof --cpu-prof-md`, keeps only the samples taken while wrk ran, and
 * charges each sample to the nearest library or module on its stack (a native frame such as a
 * socket write is charged to the code that called it).
 */
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { messageTopology, streamsOf } from "@commerce/shared/messages";
import { connect } from "nats";
import postgres from "postgres";
import {
  checkClean,
  databaseUrl,
  ensureWrk,
  findPostmaster,
  launch,
  loadCatalog,
  makeRunDir,
  median,
  memory,
  natsUrl,
  pagesPerCategory,
  paymentsEnv,
  root,
  running,
  type Service,
  say,
  serviceCommand,
  serviceEnv,
  stop,
  threads,
  threadTicks,
  type WrkRun,
  writeDataFiles,
  writeSignedNotifications,
  wrk,
} from "./harness";

const [mode = "cpu", service = "api", scenario = "product"] = process.argv.slice(2);
const runId = crypto.randomUUID().replaceAll("-", "").slice(0, 8);
const runDir = makeRunDir(`profile-${runId}`);
const natsPrefix = `prof${runId}`;
const sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });

let webhookFiles = 0;
const scenarios: Record<string, { script: string; args: () => string[]; connections: number }> = {
  product: { script: "product.lua", args: () => [runDir], connections: 64 },
  list: { script: "list.lua", args: () => [runDir, String(pagesPerCategory)], connections: 64 },
  order: { script: "order.lua", args: () => [runDir], connections: 64 },
  webhook: {
    script: "webhook.lua",
    // A new file for every run: a notification id used before would take the duplicate path.
    args: () => [
      writeSignedNotifications(`${runDir}/webhook.txt`, `prof${runId}-${webhookFiles++}-`, 40_000),
      String(threads),
    ],
    connections: 32,
  },
};

// ---- cpu ---------------------------------------------------------------------------------------

type ProfileNode = {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
};
type CpuProfile = {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
};

const buckets: Array<[string, (url: string) => boolean]> = [
  ["drizzle-orm (query building, result mapping)", (u) => u.includes("/drizzle-orm/")],
  ["postgres.js driver", (u) => u.includes("/postgres/src/")],
  ["jose (JWT verification)", (u) => u.includes("/jose/")],
  [
    "Elysia (routing, hooks, validation, response)",
    (u) => /\/(elysia|exact-mirror|memoirist)\//.test(u),
  ],
  ["TypeBox (schema checks)", (u) => u.includes("/@sinclair/typebox/")],
  ["NATS client", (u) => /\/(nats|nkeys\.js)\//.test(u)],
  ["logging (shared/src/logger.ts)", (u) => u.endsWith("/shared/src/logger.ts")],
  ["metrics (shared/src/metrics.ts)", (u) => u.endsWith("/shared/src/metrics.ts")],
  ["outbox relay (shared/src/outbox.ts)", (u) => u.endsWith("/shared/src/outbox.ts")],
  ["other shared/src code", (u) => u.includes("/shared/src/")],
  ["service code (services/*/src)", (u) => u.includes("/services/")],
];

function bucketOf(node: ProfileNode, parents: Map<number, ProfileNode>): string {
  const leaf = node.callFrame.functionName;
  let prefix = "";
  if (leaf === "writeBuffered" || leaf === "write") prefix = "socket/file write ← ";
  for (let n: ProfileNode | undefined = node; n; n = parents.get(n.id)) {
    const url = n.callFrame.url;
    // Elysia compiles each route's handler and hooks with `new Function`: frames named "anonymous".
    if (url === "" && n.callFrame.functionName === "anonymous")
      return `${prefix}Elysia (routing, hooks, validation, response)`;
    const found = buckets.find(([, test]) => test(url));
    if (found) return prefix + found[0];
  }
  return `${prefix}runtime (HTTP server, promises, GC, startup)`;
}

async function cpu() {
  const run = scenarios[scenario];
  if (!run) throw new Error(`scenario is one of ${Object.keys(scenarios).join(", ")}`);
  const name = service === "payments" ? "payments" : "api";
  const profileDir = `${runDir}/cpuprofile`;
  const target = await launch(
    runDir,
    name,
    [
      process.execPath,
      "--cpu-prof",
      "--cpu-prof-md",
      `--cpu-prof-dir=${profileDir}`,
      `services/${name}/src/main.ts`,
    ],
    name === "payments" ? paymentsEnv(natsPrefix) : serviceEnv(natsPrefix),
  );
  say(`${name} under ${run.script} for 3 s (warm-up) and 10 s (profiled window)`);
  await wrk(target, run.script, run.args(), { connections: run.connections, duration: 3 });
  const threadsBefore = threadTicks(target.process.pid);
  const from = Date.now() * 1000;
  const result = await wrk(target, run.script, run.args(), {
    connections: run.connections,
    duration: 10,
  });
  const to = Date.now() * 1000;
  const threadsAfter = threadTicks(target.process.pid);
  await stop(target);

  const file = readdirSync(profileDir).find((f) => f.endsWith(".cpuprofile"));
  if (!file) throw new Error(`no profile in ${profileDir}`);
  const profile = JSON.parse(readFileSync(`${profileDir}/${file}`, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parents = new Map<number, ProfileNode>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parents.set(c, n);

  const totals = new Map<string, number>();
  const selfByFunction = new Map<string, number>();
  let at = profile.startTime;
  let counted = 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i];
    if (at < from || at > to) return;
    const node = byId.get(id);
    if (!node) return;
    counted++;
    const bucket = bucketOf(node, parents);
    totals.set(bucket, (totals.get(bucket) ?? 0) + 1);
    const url = node.callFrame.url.replace(/^file:\/\//, "").replace(/^.*\/node_modules\//, "");
    const fn = `${node.callFrame.functionName || "(anonymous)"} ${url || "[native]"}${url ? `:${node.callFrame.lineNumber + 1}` : ""}`;
    selfByFunction.set(fn, (selfByFunction.get(fn) ?? 0) + 1);
  });

  // The sampler ticks every 1 ms of the busy JS thread; JIT, GC and other threads are not in it.
  const share = (n: number) => `${((n / counted) * 100).toFixed(1)}%`;
  const perRequest = (samples: number) => Math.round((samples * 1000) / result.requests);
  console.log(
    `\n${name} ${scenario}: ${result.rps} req/s, p50 ${result.p50_ms} ms, p99 ${result.p99_ms} ms; ` +
      `per request ${result.server_cpu_us} µs CPU in the ${name} process (all threads) and ` +
      `${result.postgres_cpu_us} µs in PostgreSQL; ${counted} JS-thread samples (1 ms each) in the window\n`,
  );
  console.log("| thread | µs CPU/request |\n|---|---:|");
  const threadRows = [...threadsAfter]
    .map(([thread, ticks]) => [thread, ticks - (threadsBefore.get(thread) ?? 0)] as const)
    .filter(([, ticks]) => ticks > 0)
    .sort((a, b) => b[1] - a[1]);
  for (const [thread, ticks] of threadRows)
    console.log(`| ${thread} | ${Math.round((ticks * 10_000) / result.requests)} |`);
  console.log(
    "\n| JS thread: where (nearest library or module on the stack) | share | ≈ µs/request |",
  );
  console.log("|---|---:|---:|");
  for (const [bucket, n] of [...totals].sort((a, b) => b[1] - a[1]))
    console.log(`| ${bucket} | ${share(n)} | ${perRequest(n)} |`);
  console.log("\n| hottest functions (self time) | share |\n|---|---:|");
  for (const [fn, n] of [...selfByFunction].sort((a, b) => b[1] - a[1]).slice(0, 25))
    console.log(`| \`${fn}\` | ${share(n)} |`);
  say(`full profile: ${profileDir} (.cpuprofile opens in Chrome DevTools; .md is Bun's summary)`);
}

// ---- variants ----------------------------------------------------------------------------------

const apiVariants = [
  { name: "as shipped", switches: "" },
  { name: "no request log line", switches: "nolog" },
  { name: "no request metrics", switches: "nometrics" },
  { name: "verified-token cache", switches: "tokencache" },
  { name: "prepared statements", switches: "prepared" },
  { name: "pool of 20", switches: "pool=20" },
  { name: "token cache + prepared + no log", switches: "tokencache,prepared,nolog" },
];
const paymentsVariants = [
  { name: "as shipped", switches: "" },
  { name: "no log lines", switches: "nolog" },
  { name: "prepared statements", switches: "prepared" },
  { name: "pool of 20", switches: "pool=20" },
  { name: "prepared + no log", switches: "prepared,nolog" },
];

async function variantRuns(name: "api" | "payments") {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
  const seconds = Number(process.env.BENCH_SECONDS ?? 6);
  const variants = name === "api" ? apiVariants : paymentsVariants;
  const env = name === "api" ? serviceEnv(natsPrefix) : paymentsEnv(natsPrefix);
  const targets: Service[] = [];
  for (const v of variants)
    targets.push(
      await launch(
        runDir,
        v.switches || "baseline",
        [process.execPath, `bench/${name}-variant.ts`],
        {
          ...env,
          BENCH_VARIANT: v.switches,
        },
      ),
    );
  const kinds = name === "api" ? (["product", "list"] as const) : (["webhook"] as const);
  for (const kind of kinds) {
    const run = scenarios[kind];
    for (const t of targets)
      await wrk(t, run.script, run.args(), { connections: run.connections, duration: 2 });
    const runs = new Map<string, WrkRun[]>(targets.map((t) => [t.name, []]));
    for (let round = 0; round < rounds; round++)
      for (const t of targets) {
        const r = await wrk(t, run.script, run.args(), {
          connections: run.connections,
          duration: seconds,
        });
        runs.get(t.name)?.push(r);
        say(`${kind} ${t.name}: ${r.rps} req/s`);
      }
    for (const list of runs.values()) checkClean(list, kind);
    const base = median(runs.get("baseline")?.map((r) => r.rps) ?? []);
    console.log(
      `\n${kind}: ${rounds} rounds × ${seconds} s, wrk -t${threads} -c${run.connections}\n\n` +
        "| variant | req/s | vs as shipped | p99 ms | server CPU µs/req | PostgreSQL CPU µs/req |\n" +
        "|---|---:|---:|---:|---:|---:|",
    );
    variants.forEach((v, i) => {
      const r = runs.get(targets[i].name) ?? [];
      const rps = median(r.map((x) => x.rps));
      console.log(
        `| ${v.name} | ${Math.round(rps)} | ${(rps / base).toFixed(2)}× | ${median(r.map((x) => x.p99_ms)).toFixed(1)} | ${median(r.map((x) => x.server_cpu_us))} | ${median(r.map((x) => x.postgres_cpu_us))} |`,
      );
    });
  }
}

// ---- micro -------------------------------------------------------------------------------------

async function micro() {
  const { createTokenVerifier } = await import("../services/api/src/modules/auth/service");
  const { createLogger } = await import("@commerce/shared/logger");
  const { Metrics } = await import("@commerce/shared/metrics");
  const { createDatabase } = await import("../services/api/src/db");
  const { products } = await import("../services/api/src/db/schema");
  const { asc, count, eq } = await import("drizzle-orm");
  const { jwtSecret, signToken } = await import("../test/e2e/stack");
  const { openSync, writeSync } = await import("node:fs");

  const time = async (what: string, n: number, fn: (i: number) => unknown) => {
    for (let i = 0; i < Math.min(n, 2000); i++) await fn(i);
    const started = performance.now();
    for (let i = 0; i < n; i++) await fn(i);
    const us = ((performance.now() - started) * 1000) / n;
    console.log(`| ${what} | ${us.toFixed(1)} |`);
  };
  console.log("| one call of | µs |\n|---|---:|");

  const verify = createTokenVerifier({ jwtSecret });
  const token = await signToken("bench-cust-1");
  await time("createTokenVerifier(HS256) (jose jwtVerify + checks)", 20_000, () => verify(token));
  const { createHmac } = await import("node:crypto");
  await time("HMAC-SHA256 of a token with node:crypto (what HS256 needs)", 50_000, () =>
    createHmac("sha256", jwtSecret).update(token).digest(),
  );

  const fd = openSync(`${runDir}/micro.log`, "a");
  const logger = createLogger("info", { service: "api" }, (line) => writeSync(fd, line));
  const fields = {
    request_id: crypto.randomUUID(),
    method: "GET",
    route: "/api/products/:id",
    status: 200,
    duration_ms: 1.23,
  };
  await time("logger.info request line (JSON + ISO time + write(2) to a file)", 50_000, () =>
    logger.info("request", fields),
  );
  const metrics = new Metrics();
  const labels = { method: "GET", route: "/api/products/:id", status: "200" };
  await time("metrics: request counter + histogram", 100_000, () => {
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, 0.004);
  });
  await time("crypto.randomUUID (request id)", 100_000, () => crypto.randomUUID());

  const client = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const db = createDatabase(client);
  const columns = {
    id: products.id,
    name: products.name,
    price: products.price,
    category: products.category,
  };
  await time("drizzle: build the product query (no database)", 50_000, (i) =>
    db.select(columns).from(products).where(eq(products.id, i)).toSQL(),
  );
  const where = eq(products.category, "bench-c01");
  await time("drizzle: build the two list queries (no database)", 20_000, () => {
    db.select(columns)
      .from(products)
      .where(where)
      .orderBy(asc(products.id))
      .limit(20)
      .offset(40)
      .toSQL();
    db.select({ total: count() }).from(products).where(where).toSQL();
  });
  const [{ id }] = await client`select id from api.products where category = 'bench-c01' limit 1`;
  await time("read one product, one at a time: drizzle (unprepared, 2 round trips)", 3000, () =>
    db.select(columns).from(products).where(eq(products.id, id)),
  );
  await time(
    "read one product, one at a time: postgres.js tagged (prepared)",
    3000,
    () =>
      client`select "id", "name", "price", "category" from "api"."products" where "api"."products"."id" = ${id}`,
  );
  const prepared = db
    .select(columns)
    .from(products)
    .where(eq(products.id, (await import("drizzle-orm")).sql.placeholder("id")))
    .prepare("bench_product");
  await time("read one product, one at a time: drizzle .prepare()", 3000, () =>
    prepared.execute({ id }),
  );
  await client.end();
}

// ---- memory ------------------------------------------------------------------------------------

async function memoryRuns() {
  const build = Bun.spawnSync([process.execPath, "scripts/build.ts"], { cwd: root });
  if (build.exitCode !== 0) throw new Error(`npm run build failed:\n${build.stderr}`);
  console.log(
    "| binary | BUN_OPTIONS | load | req/s | RSS at /ready MiB | RSS after load MiB | peak MiB | RSS 5 s later MiB |\n" +
      "|---|---|---|---:|---:|---:|---:|---:|",
  );
  for (const name of ["api", "payments"] as const)
    for (const options of ["", "--smol"]) {
      const env = name === "api" ? serviceEnv(natsPrefix) : paymentsEnv(natsPrefix);
      const target = await launch(runDir, `${name}${options}`, serviceCommand(name), {
        ...env,
        BUN_OPTIONS: options,
      });
      await Bun.sleep(300);
      const atReady = memory(target.process.pid).rss_mib;
      const loads = name === "api" ? ["product", "list", "order"] : ["webhook"];
      const rates: number[] = [];
      for (const load of loads) {
        const run = scenarios[load];
        const r = await wrk(target, run.script, run.args(), {
          connections: run.connections,
          duration: 8,
        });
        rates.push(r.rps);
      }
      const after = memory(target.process.pid);
      await Bun.sleep(5000);
      const later = memory(target.process.pid).rss_mib;
      await stop(target);
      console.log(
        `| ${name} | ${options || "(none)"} | ${loads.join(", ")} 8 s each | ${rates.join(", ")} | ${atReady} | ${after.rss_mib} | ${after.peak_mib} | ${later} |`,
      );
    }
}

// ---- main --------------------------------------------------------------------------------------

try {
  ensureWrk();
  await findPostmaster(sql);
  const productIds = await loadCatalog(sql);
  await writeDataFiles(runDir, productIds);
  if (mode === "cpu") await cpu();
  else if (mode === "variants") await variantRuns(service === "payments" ? "payments" : "api");
  else if (mode === "micro") await micro();
  else if (mode === "memory") await memoryRuns();
  else throw new Error("mode is cpu, variants, micro or memory");
} finally {
  await Promise.all([...running].map(stop));
  await sql`delete from api.orders where customer_id like 'bench-cust-%'`;
  await sql`delete from payments.notifications where id like ${`prof${runId}-%`}`;
  const topology = messageTopology(natsPrefix);
  await sql`delete from payments.outbox where subject = ${topology.payments.orderPaid}`;
  const nc = await connect({ servers: natsUrl });
  const jsm = await nc.jetstreamManager();
  for (const stream of streamsOf(topology)) await jsm.streams.delete(stream.name).catch(() => {});
  await nc.close();
  await sql.end();
  for (const file of readdirSync(runDir))
    if (file.endsWith(".log") || file.endsWith(".txt")) rmSync(`${runDir}/${file}`);
}

/**
 * What bench/run.ts uses: launching services with their output in files,
 * the bench catalog and the data files the wrk scripts read, wrk runs with CPU accounting.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { signPayload } from "@commerce/shared/signature";
import { freePort, jwtSecret, signToken, webhookSecret } from "@commerce/testing/basics";
import type { Subprocess } from "bun";
import type postgres from "postgres";

export const root = new URL("..", import.meta.url).pathname;
export const databaseUrl = process.env.DATABASE_URL ?? "postgres://root@127.0.0.1:5432/test";
export const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
export const threads = 2;
export const readConnections = 64;
export const customers = 1000;
export { jwtSecret, webhookSecret };

export const catalog = { products: 5000, categories: 40, perPage: 20 };
export const categoryNames = Array.from(
  { length: catalog.categories },
  (_, i) => `bench-c${String(i).padStart(2, "0")}`,
);
export const pagesPerCategory = Math.ceil(catalog.products / catalog.categories / catalog.perPage);

export const say = (line: string) =>
  console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);

/** A fresh directory for one run's logs, data files and results. */
export function makeRunDir(label: string): string {
  const dir = `${tmpdir()}/commerce-${label}`;
  mkdirSync(dir, { recursive: true });
  return dir;
}

// ---- tools and machine -------------------------------------------------------------------------

export function ensureWrk(): void {
  if (Bun.which("wrk")) return;
  if (process.getuid?.() !== 0) {
    console.error(
      "wrk is not installed: run `sudo apt-get install -y wrk`, then npm run bench again.",
    );
    process.exit(1);
  }
  say("installing wrk (apt-get install -y wrk)");
  let install = Bun.spawnSync(["apt-get", "install", "-y", "wrk"], { stdout: "ignore" });
  if (install.exitCode !== 0) {
    Bun.spawnSync(["apt-get", "update"], { stdout: "ignore" });
    install = Bun.spawnSync(["apt-get", "install", "-y", "wrk"], { stdout: "ignore" });
  }
  if (install.exitCode !== 0 || !Bun.which("wrk")) {
    console.error("could not install wrk; install it with `apt-get install -y wrk`.");
    process.exit(1);
  }
}

export function machine() {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  const model = cpuinfo.match(/^model name\s*:\s*(.*)$/m)?.[1] ?? "unknown";
  const version = (command: string[]) =>
    Bun.spawnSync(command).stdout.toString().trim().split("\n")[0] ?? "";
  return {
    cpus: cpus().length,
    cpu_model: model,
    memory_gib: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    kernel: version(["uname", "-r"]),
    bun: Bun.version,
    node: version(["node", "--version"]),
    wrk: version(["wrk", "--version"]).split(" ").slice(0, 2).join(" "),
    load_average_at_start: readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" "),
  };
}

// ---- processes ---------------------------------------------------------------------------------

export type Service = {
  name: string;
  url: string;
  process: Subprocess;
  readyMs: number;
  log?: string;
};

export const running: Service[] = [];

export async function launch(
  runDir: string,
  name: string,
  command: string[],
  env: Record<string, string>,
  { log = true } = {},
): Promise<Service> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const logPath = log ? `${runDir}/${name}.log` : undefined;
  const started = performance.now();
  const child = Bun.spawn(command, {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", ...env, PORT: String(port) },
    stdout: logPath ? Bun.file(logPath) : "ignore",
    stderr: Bun.file(`${runDir}/${name}.err`),
  });
  const service: Service = { name, url, process: child, readyMs: 0, log: logPath };
  running.push(service);
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`${name} exited with ${child.exitCode}; see ${runDir}/${name}.err`);
    try {
      if ((await fetch(`${url}/ready`)).ok) {
        service.readyMs = performance.now() - started;
        return service;
      }
    } catch {}
    await Bun.sleep(5);
  }
  throw new Error(`${name} not ready after 30 s; see ${runDir}/${name}.err`);
}

export async function stop(service: Service): Promise<void> {
  const index = running.indexOf(service);
  if (index >= 0) running.splice(index, 1);
  if (service.process.exitCode !== null) return;
  service.process.kill("SIGTERM");
  const exited = await Promise.race([service.process.exited, Bun.sleep(12_000).then(() => null)]);
  if (exited === null) service.process.kill("SIGKILL");
}

export const serviceCommand = (name: "api" | "payments", fromSources = false) =>
  fromSources ? [process.execPath, `${root}services/${name}/src/main.ts`] : [`${root}dist/${name}`];

export const serviceEnv = (natsPrefix: string) => ({
  DATABASE_URL: databaseUrl,
  NATS_URL: natsUrl,
  NATS_PREFIX: natsPrefix,
  AUTH_JWT_SECRET: jwtSecret,
  PAYMENT_WEBHOOK_SECRETS: webhookSecret,
  LOG_LEVEL: "info",
});
// All load comes from 127.0.0.1, one "source IP", so the payments per-IP budget would answer 429.
export const paymentsEnv = (natsPrefix: string) => ({
  ...serviceEnv(natsPrefix),
  RATE_LIMIT_RPS: "0",
});

/**
 * /proc/<pid>/status of the service's own process, in MiB: resident, of it anonymous (heap, JIT,
 * buffers) and file-backed (almost all the binary's own pages: Bun and JavaScriptCore), and peak.
 */
export function memory(pid: number): {
  rss_mib: number;
  anon_mib: number;
  file_mib: number;
  peak_mib: number;
} {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+)`, "m"))?.[1]);
  const mib = (field: string) => Math.round(kib(field) / 102.4) / 10;
  return {
    rss_mib: mib("VmRSS"),
    anon_mib: mib("RssAnon"),
    file_mib: mib("RssFile"),
    peak_mib: mib("VmHWM"),
  };
}

/** User + system CPU of a process, in clock ticks (1/100 s). */
export function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** The PostgreSQL server under test: its postmaster and every process it started. */
let postmaster = 0;

/** Finds the PostgreSQL server under test from one of its backends. */
export async function findPostmaster(sql: postgres.Sql): Promise<void> {
  const [{ pid }] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
  postmaster = parentOf(pid);
}

export function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

export function postgresTicks(): number {
  let total = cpuTicks(postmaster);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (parentOf(Number(entry)) === postmaster) total += cpuTicks(Number(entry));
    } catch {}
  }
  return total;
}

/** The nats-server of NATS_URL (other ones may run for tests), found by its port. */
function natsServerPids(): number[] {
  const port = new URL(natsUrl.replace(/^nats:/, "http:")).port || "4222";
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() !== "nats-server") continue;
      const args = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const portArg = args.findIndex((a) => a === "-p" || a === "--port");
      if ((portArg >= 0 ? args[portArg + 1] : "4222") === port) pids.push(Number(entry));
    } catch {}
  }
  return pids;
}

export const natsTicks = () => natsServerPids().reduce((n, pid) => n + cpuTicks(pid), 0);

/** Busy CPU of the whole machine, in clock ticks, from /proc/stat. */
export function machineBusyTicks(): number {
  const [, user, nice, system, , , irq, softirq, steal] = readFileSync("/proc/stat", "utf8")
    .split("\n")[0]
    .split(/\s+/)
    .map(Number);
  return user + nice + system + irq + softirq + steal;
}

// ---- wrk ---------------------------------------------------------------------------------------

export type WrkRun = {
  target: string;
  rps: number;
  requests: number;
  errors: number;
  non2xx: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  /** CPU the server process, all PostgreSQL processes and wrk itself used, per request. */
  server_cpu_us: number;
  postgres_cpu_us: number;
  nats_cpu_us: number;
  wrk_cpu_us: number;
  /** CPU used by anything else on the machine meanwhile, in % of one core: noise. */
  other_cpu_pct: number;
};

let quietBudgetMs = 90_000;

/**
 * Others may share this machine (a test run, a build): before a measured run, wait until the
 * machine has been nearly idle for half a second, up to 10 s each time and 90 s per process.
 */
export async function waitForQuiet(): Promise<void> {
  const deadline = performance.now() + Math.min(10_000, quietBudgetMs);
  const started = performance.now();
  for (let i = 0; i < 40; i++) {
    const before = machineBusyTicks();
    await Bun.sleep(500);
    const busyPct = (machineBusyTicks() - before) * 2;
    if (busyPct < 20 || performance.now() > deadline) break;
    if (i === 0) say(`waiting for the machine to quieten (${busyPct}% of a core busy)`);
  }
  quietBudgetMs -= performance.now() - started - 500;
}

export async function wrk(
  target: Service,
  script: string,
  args: string[],
  { connections = readConnections, duration = 8 } = {},
): Promise<WrkRun> {
  await waitForQuiet();
  const pid = target.process.pid;
  const serverBefore = cpuTicks(pid);
  const postgresBefore = postgresTicks();
  const natsBefore = natsTicks();
  const busyBefore = machineBusyTicks();
  const started = performance.now();
  const child = Bun.spawn(
    [
      "wrk",
      `-t${threads}`,
      `-c${connections}`,
      `-d${duration}s`,
      "--timeout",
      "10s",
      "-s",
      `bench/wrk/${script}`,
      target.url,
      "--",
      ...args,
    ],
    { cwd: root, stdout: "pipe", stderr: "pipe" },
  );
  const [out, err] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  await child.exited;
  const serverTicks = cpuTicks(pid) - serverBefore;
  const postgresCpu = postgresTicks() - postgresBefore;
  const natsCpu = natsTicks() - natsBefore;
  const busy = machineBusyTicks() - busyBefore;
  const elapsedTicks = (performance.now() - started) / 10;
  const line = out.split("\n").find((l) => l.startsWith("BENCH "));
  if (child.exitCode !== 0 || !line)
    throw new Error(`wrk ${script} against ${target.name} failed:\n${out}\n${err}`);
  const r = JSON.parse(line.slice(6));
  const perRequest = (ticks: number) =>
    r.requests ? Math.round((ticks * 10_000) / r.requests) : Number.NaN;
  const wrkCpuUs = Number(child.resourceUsage()?.cpuTime.total ?? 0);
  const other = busy - serverTicks - postgresCpu - natsCpu - wrkCpuUs / 10_000;
  return {
    target: target.name,
    rps: Math.round(r.requests / (r.duration_us / 1e6)),
    requests: r.requests,
    errors: r.errors_connect + r.errors_read + r.errors_write + r.errors_timeout,
    non2xx: r.errors_status,
    p50_ms: r.p50_us / 1000,
    p90_ms: r.p90_us / 1000,
    p99_ms: r.p99_us / 1000,
    server_cpu_us: perRequest(serverTicks),
    postgres_cpu_us: perRequest(postgresCpu),
    nats_cpu_us: perRequest(natsCpu),
    wrk_cpu_us: r.requests ? Math.round(wrkCpuUs / r.requests) : Number.NaN,
    other_cpu_pct: Math.max(0, Math.round((other / elapsedTicks) * 100)),
  };
}

export const median = (values: number[]) => {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/** The median of each field over the rounds; errors are summed. */
export function summarise(runs: WrkRun[]) {
  const m = (pick: (r: WrkRun) => number) => median(runs.map(pick));
  return {
    target: runs[0]?.target ?? "",
    rounds: runs.length,
    rps: Math.round(m((r) => r.rps)),
    rps_each: runs.map((r) => r.rps),
    p50_ms: m((r) => r.p50_ms),
    p99_ms: m((r) => r.p99_ms),
    server_cpu_us: m((r) => r.server_cpu_us),
    postgres_cpu_us: m((r) => r.postgres_cpu_us),
    nats_cpu_us: m((r) => r.nats_cpu_us),
    wrk_cpu_us: m((r) => r.wrk_cpu_us),
    other_cpu_pct_max: Math.max(...runs.map((r) => r.other_cpu_pct)),
    errors: runs.reduce((n, r) => n + r.errors, 0),
    non2xx: runs.reduce((n, r) => n + r.non2xx, 0),
  };
}

export function checkClean(runs: WrkRun[], what: string): void {
  for (const r of runs) {
    if (r.other_cpu_pct > 10)
      say(`WARNING ${what} ${r.target}: other processes used ${r.other_cpu_pct}% of a core`);
    if (r.errors || r.non2xx)
      say(`WARNING ${what} ${r.target}: ${r.errors} socket errors, ${r.non2xx} non-2xx responses`);
  }
}

/** The bench catalog in its own categories (tests never look there); reused when complete. */
export async function loadCatalog(sql: postgres.Sql): Promise<number[]> {
  const [{ present }] = await sql<{ present: number }[]>`
    select count(*)::int as present from api.products where category = any(${categoryNames})`;
  if (present !== catalog.products) {
    say(`loading the catalog: ${catalog.products} products in ${catalog.categories} categories`);
    await sql.begin(async (tx) => {
      const old = tx`select id from api.products where category = any(${categoryNames})`;
      await tx`delete from api.cart_items where product_id in (${old})`;
      await tx`
        with gone as (
          delete from api.order_items where order_id in
            (select order_id from api.order_items where product_id in (${old}))
          returning order_id), events as (
          delete from api.order_events where order_id in (select order_id from gone))
        delete from api.orders where id in (select order_id from gone)`;
      await tx`delete from api.products where category = any(${categoryNames})`;
      await tx`
        insert into api.products (name, price, category)
        select 'Bench product ' || g, 100 + (g * 7919) % 99900,
               'bench-c' || lpad((g % ${catalog.categories})::text, 2, '0')
        from generate_series(1, ${catalog.products}) as g order by g`;
    });
    await sql`analyze api.products`;
  } else say("reusing the catalog already loaded");
  const rows = await sql<{ id: number }[]>`
    select id from api.products where category = any(${categoryNames}) order by id`;
  return rows.map((r) => r.id);
}

/** tokens.txt (one customer each), ids.txt and categories.txt, as the wrk scripts read them. */
export async function writeDataFiles(dir: string, productIds: number[]): Promise<string[]> {
  const tokens = await Promise.all(
    Array.from({ length: customers }, (_, i) => signToken(`bench-cust-${i}`)),
  );
  writeFileSync(`${dir}/tokens.txt`, `${tokens.join("\n")}\n`);
  writeFileSync(`${dir}/ids.txt`, `${productIds.join("\n")}\n`);
  writeFileSync(`${dir}/categories.txt`, `${categoryNames.join("\n")}\n`);
  return tokens;
}

/**
 * `count` distinct `payment.succeeded` notifications for webhook.lua, one "<X-Signature>\t<body>"
 * line each, signed now (they stay valid for WEBHOOK_TOLERANCE_SECONDS, 300 s by default).
 */
/** One signed `payment.succeeded` with notification id `id`, paying `order` in full; its status. */
export async function payInFull(
  payments: Service,
  order: { order_id: number; amount: number; currency: string },
  id: string,
): Promise<number> {
  const body = JSON.stringify({
    event: "payment.succeeded",
    order_id: order.order_id,
    amount: order.amount,
    currency: order.currency,
    id,
  });
  const response = await fetch(`${payments.url}/api/webhooks/payment`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-signature": signPayload(body, webhookSecret, Math.floor(Date.now() / 1000)),
    },
    body,
  });
  await response.arrayBuffer();
  return response.status;
}

export function writeSignedNotifications(file: string, idPrefix: string, count: number): string {
  const now = Math.floor(Date.now() / 1000);
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const body = JSON.stringify({
      event: "payment.succeeded",
      order_id: 1 + Math.floor(Math.random() * 1_000_000_000),
      amount: 1999,
      currency: "USD",
      id: `${idPrefix}${i}`,
    });
    lines.push(`${signPayload(body, webhookSecret, now)}\t${body}`);
  }
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

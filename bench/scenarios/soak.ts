/**
 * The soak row (O9): minutes of steady mixed load on both services at once, product and list
 * reads and orders on the api, webhooks on the payments service (whose messages the api applies),
 * each from its own wrk with a few connections, in windows of `windowSeconds`. Per window and
 * scenario: throughput and p99; per process, RSS at the end of minute 1 and at the end. Its floor:
 * the postgres.js floor's product reads just before and just after, on the same connections.
 *
 *   BENCH_ONLY=soak npm run bench      # 5 minutes; BENCH_SOAK_MINUTES=2 for a quick look
 */
import postgres from "postgres";
import { loadCatalog, pagesPerCategory, writeDataFiles, writeSignedNotifications } from "../data";
import {
  databaseUrl,
  launch,
  paymentsEnv,
  root,
  type Service,
  say,
  serviceEnv,
  stop,
} from "../harness";
import { memory } from "../machine";

type Scenario = {
  name: "product" | "list" | "order" | "webhook";
  service: "api" | "payments";
  script: string;
  connections: number;
};

const scenarios: Scenario[] = [
  { name: "product", service: "api", script: "product.lua", connections: 8 },
  { name: "list", service: "api", script: "list.lua", connections: 8 },
  { name: "order", service: "api", script: "order.lua", connections: 4 },
  { name: "webhook", service: "payments", script: "webhook.lua", connections: 4 },
];

export type WindowRun = { rps: number; p99_ms: number; non2xx: number; errors: number };
export type SoakResults = {
  minutes: number;
  window_seconds: number;
  windows: { end_s: number; runs: Record<Scenario["name"], WindowRun> }[];
  rss_mib: Record<"api" | "payments", { minute_1: number; end: number; after_5s: number }>;
  floor_product_rps: { before: number; after: number };
  goals: {
    api_last_over_first: number;
    payments_last_over_first: number;
    api_memory_end_over_minute_1: number;
    payments_memory_end_over_minute_1: number;
  };
};

/** One wrk run of `seconds` against `target`, without the quiet wait or CPU accounting of `wrk`. */
async function wrkWindow(
  target: Service,
  script: string,
  args: string[],
  connections: number,
  seconds: number,
): Promise<WindowRun> {
  const child = Bun.spawn(
    ["wrk", "-t1", `-c${connections}`, `-d${seconds}s`, "--timeout", "10s", "-s"].concat([
      `bench/wrk/${script}`,
      target.url,
      "--",
      ...args,
    ]),
    { cwd: root, stdout: "pipe", stderr: "pipe" },
  );
  const out = await new Response(child.stdout).text();
  await child.exited;
  const line = out.split("\n").find((l) => l.startsWith("BENCH "));
  if (!line) throw new Error(`wrk ${script} against ${target.name} failed:\n${out}`);
  const r = JSON.parse(line.slice(6));
  return {
    rps: Math.round(r.requests / (r.duration_us / 1e6)),
    p99_ms: r.p99_us / 1000,
    non2xx: r.errors_status,
    errors: r.errors_connect + r.errors_read + r.errors_write + r.errors_timeout,
  };
}

const minuteRate = (results: SoakResults["windows"], names: Scenario["name"][]) =>
  results.reduce((sum, w) => sum + names.reduce((n, name) => n + w.runs[name].rps, 0), 0) /
  results.length;

export async function soakBench(
  runDir: string,
  command: (name: "api" | "payments") => string[],
  { minutes = 5, windowSeconds = 30, prefix = `soak${Date.now()}` } = {},
): Promise<SoakResults> {
  const sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
  const productIds = await loadCatalog(sql);
  await sql.end();
  await writeDataFiles(runDir, productIds);
  // 1000 customers ordering for minutes would hit the N5 hold limits within seconds.
  const api = await launch(runDir, "soak-api", command("api"), {
    ...serviceEnv(prefix),
    HOLD_MAX_ORDERS: "0",
    HOLD_MAX_UNITS: "0",
  });
  const payments = await launch(runDir, "soak-payments", command("payments"), paymentsEnv(prefix));
  const floor = await launch(runDir, "soak-floor", [process.execPath, "bench/floor.ts"], {
    DATABASE_URL: databaseUrl,
  });
  const targets = { api, payments };
  const argsOf = (s: Scenario, window: number) =>
    s.name === "webhook"
      ? [
          // Signed now, so each window's notifications are fresh (W2's 300 s tolerance).
          writeSignedNotifications(`${runDir}/soak-webhooks.txt`, `${prefix}-${window}-`, 40_000),
          "1",
        ]
      : [runDir, String(pagesPerCategory)];
  const floorRun = () => wrkWindow(floor, "product.lua", [runDir], 8, 10);
  const floorBefore = await floorRun();
  say(`soak: floor product reads ${floorBefore.rps} req/s; ${minutes} minutes of mixed load`);

  const windows: SoakResults["windows"] = [];
  const rss = {
    api: { minute_1: 0, end: 0, after_5s: 0 },
    payments: { minute_1: 0, end: 0, after_5s: 0 },
  };
  const count = Math.round((minutes * 60) / windowSeconds);
  for (let window = 0; window < count; window++) {
    const runs = await Promise.all(
      scenarios.map((s) =>
        wrkWindow(targets[s.service], s.script, argsOf(s, window), s.connections, windowSeconds),
      ),
    );
    const byName = Object.fromEntries(scenarios.map((s, i) => [s.name, runs[i]])) as Record<
      Scenario["name"],
      WindowRun
    >;
    windows.push({ end_s: (window + 1) * windowSeconds, runs: byName });
    say(
      `soak ${(window + 1) * windowSeconds} s: ${scenarios.map((s) => `${s.name} ${byName[s.name].rps}/s p99 ${byName[s.name].p99_ms} ms`).join(", ")}`,
    );
    if ((window + 1) * windowSeconds === 60) {
      rss.api.minute_1 = memory(api.pid).rss_mib;
      rss.payments.minute_1 = memory(payments.pid).rss_mib;
    }
  }
  rss.api.end = memory(api.pid).rss_mib;
  rss.payments.end = memory(payments.pid).rss_mib;
  const floorAfter = await floorRun();
  rss.api.after_5s = memory(api.pid).rss_mib;
  rss.payments.after_5s = memory(payments.pid).rss_mib;
  await Promise.all([stop(api), stop(payments), stop(floor)]);

  const perMinute = Math.round(60 / windowSeconds);
  const first = windows.slice(0, perMinute);
  const last = windows.slice(-perMinute);
  const apiNames: Scenario["name"][] = ["product", "list", "order"];
  return {
    minutes,
    window_seconds: windowSeconds,
    windows,
    rss_mib: rss,
    floor_product_rps: { before: floorBefore.rps, after: floorAfter.rps },
    goals: {
      api_last_over_first: minuteRate(last, apiNames) / minuteRate(first, apiNames),
      payments_last_over_first: minuteRate(last, ["webhook"]) / minuteRate(first, ["webhook"]),
      api_memory_end_over_minute_1: rss.api.end / rss.api.minute_1,
      payments_memory_end_over_minute_1: rss.payments.end / rss.payments.minute_1,
    },
  };
}

const x = (value: number) => `${value.toFixed(2)}×`;

export function renderSoak(r: SoakResults, file?: string): string {
  const names = scenarios.map((s) => s.name);
  const lines = [
    `Soak: ${r.minutes} min of mixed load (${scenarios.map((s) => `${s.name} ${s.connections} conn`).join(", ")}); floor (postgres.js) product reads on 8 connections before / after: ${r.floor_product_rps.before} / ${r.floor_product_rps.after} req/s.`,
    "",
    `| window end | ${names.map((n) => `${n} req/s (p99 ms)`).join(" | ")} | errors / non-2xx |`,
    `|---:|${names.map(() => "---:").join("|")}|---:|`,
    ...r.windows.map(
      (w) =>
        `| ${w.end_s} s | ${names.map((n) => `${w.runs[n].rps} (${w.runs[n].p99_ms.toFixed(1)})`).join(" | ")} | ${names.reduce((e, n) => e + w.runs[n].errors, 0)} / ${names.reduce((e, n) => e + w.runs[n].non2xx, 0)} |`,
    ),
    "",
    "| O9 goal | target | measured | |",
    "|---|---|---|---|",
    `| api throughput, last minute / first | ≥ 0.90× | ${x(r.goals.api_last_over_first)} | ${r.goals.api_last_over_first >= 0.9 ? "met" : "**missed**"} |`,
    `| payments throughput, last minute / first | ≥ 0.90× | ${x(r.goals.payments_last_over_first)} | ${r.goals.payments_last_over_first >= 0.9 ? "met" : "**missed**"} |`,
    `| api RSS at the end / end of minute 1 | within 20% | ${r.rss_mib.api.minute_1} → ${r.rss_mib.api.end} MiB (${x(r.goals.api_memory_end_over_minute_1)}) | ${Math.abs(r.goals.api_memory_end_over_minute_1 - 1) <= 0.2 ? "met" : "**missed**"} |`,
    `| payments RSS at the end / end of minute 1 | within 20% | ${r.rss_mib.payments.minute_1} → ${r.rss_mib.payments.end} MiB (${x(r.goals.payments_memory_end_over_minute_1)}) | ${Math.abs(r.goals.payments_memory_end_over_minute_1 - 1) <= 0.2 ? "met" : "**missed**"} |`,
  ];
  if (file) lines.push("", `Results: ${file}`);
  return lines.join("\n");
}

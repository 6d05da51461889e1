/** wrk runs against a service, with the CPU each process used per request, and their summaries. */
import { readConnections, root, type Service, say, threads } from "./harness";
import { cpuTicks, machineBusyTicks, natsTicks, postgresTicks } from "./machine";

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
  const pid = target.pid;
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

/**
 * Issue 38's rows, each on a private stack of its own (private PostgreSQL and nats-server, the
 * services from source or the binaries as the run says; bench/paid-cost.ts measures):
 *
 *   BENCH_ONLY=paid-cost npm run bench     # a paid order's cost at 50, 250 and 1,000 payments/s
 *   BENCH_ONLY=paid-history npm run bench  # its cost with 10k, 100k and 1M orders of history
 *
 * (The sustained row, 1,000/s for 10 minutes, is ./paid-sustained.ts.) Each report starts with
 * the private stack's durability block (../durability.ts).
 *
 * BENCH_PAID_RATES (e.g. "50") and BENCH_PAID_HISTORY (e.g. "10000,100000") pick fewer.
 */
import { availableParallelism } from "node:os";
import { writePaidHistory } from "@commerce/testing/paid-history";
import { type PrivateStack, startPrivateStack } from "@commerce/testing/private-stack";
import type { Outcome } from "../context";
import { runDir, settings } from "../context";
import { type Durability, durabilityOf, renderDurability } from "../durability";
import { ms, verdict } from "../format";
import { say } from "../harness";
import { idleRate, measurePaidCost, type PaidCost, unpaidOrders } from "../paid-cost";

const goals = { lone: 1.5, saturated: 0.5, idleCores: 0.02, historyFlat: 1.5 };
const rates = (process.env.BENCH_PAID_RATES ?? "50,250,1000").split(",").map(Number);
const historySizes = (process.env.BENCH_PAID_HISTORY ?? "10000,100000,1000000")
  .split(",")
  .map(Number);
/** Seconds of payments at each rate: the rate's orders are created beforehand. */
const secondsAt = (rate: number) => (rate <= 50 ? 10 : rate <= 250 ? 8 : 3);

export async function withStack<T>(
  name: string,
  run: (stack: PrivateStack) => Promise<T>,
): Promise<T> {
  const dir = `${runDir}/${name}`;
  await Bun.$`mkdir -p ${dir}`;
  const stack = await startPrivateStack(dir, { fromSources: settings.useSources });
  try {
    return await run(stack);
  } finally {
    await stack.stop();
  }
}

/** A few orders paid first, so the JIT and the pools are warm before a window is measured. */
async function warmUp(stack: PrivateStack, idle: PaidCost["idle_cores"]) {
  await measurePaidCost(stack, await unpaidOrders(stack, 100), 50, idle, { tag: "warm" });
}

export async function paidCostRow(): Promise<Outcome> {
  const results = await withStack("paid-cost", async (stack) => {
    say("paid cost: the idle rate, 20 s with no traffic");
    const idle = await idleRate(stack, 20);
    await warmUp(stack, idle);
    const runs: PaidCost[] = [];
    const durability = await durabilityOf(stack);
    for (const rate of rates) {
      const orders = await unpaidOrders(stack, rate * secondsAt(rate));
      await Bun.sleep(2000);
      say(`paid cost: ${orders.length} orders paid at ${rate}/s`);
      const run = await measurePaidCost(stack, orders, rate, idle, { tag: `r${rate}` });
      say(
        `paid cost at ${rate}/s: ${run.cpu_ms.total} ms per paid order (load ${run.load_average})`,
      );
      runs.push(run);
    }
    return { durability, idle, runs };
  });
  return {
    files: { "paid-cost.json": results },
    print: `${renderDurability(results.durability)}\n${renderPaidCost(results.runs)}`,
  };
}

export async function paidHistoryRow(): Promise<Outcome> {
  const runs: (PaidCost & { history: number; seed_s: number })[] = [];
  let durability: Durability | undefined;
  for (const size of historySizes)
    runs.push(
      await withStack(`paid-history-${size}`, async (stack) => {
        durability ??= await durabilityOf(stack);
        say(`paid history: writing ${size} orders of history`);
        const seeded = performance.now();
        await writePaidHistory(stack.sql, size);
        const seedS = Math.round((performance.now() - seeded) / 100) / 10;
        const idle = await idleRate(stack, 10);
        await warmUp(stack, idle);
        const orders = await unpaidOrders(stack, 500);
        await Bun.sleep(2000);
        const run = await measurePaidCost(stack, orders, 50, idle, { tag: "h" });
        say(
          `paid history ${size}: ${run.cpu_ms.total} ms, ${run.statements} statements, ` +
            `${run.rows_read} rows read per paid order (load ${run.load_average})`,
        );
        return { ...run, history: size, seed_s: seedS };
      }),
    );
  return {
    files: { "paid-history.json": { durability, runs } },
    print: `${durability ? renderDurability(durability) : ""}\n${renderPaidHistory(runs)}`,
  };
}

const cpuCells = (run: PaidCost) =>
  `${ms(run.cpu_ms.api)} / ${ms(run.cpu_ms.payments)} / ${ms(run.cpu_ms.nats)} / ${ms(run.cpu_ms.postgres)}`;

const cores = availableParallelism();

/** Paid orders a second the machine could hold at this run's cost, and the share the rate used. */
const limitCell = (run: PaidCost) => {
  const limit = ((cores - run.idle_cores.total) * 1000) / run.cpu_ms.total;
  return `${Math.round(limit)}/s (${Math.round((run.rate_per_s / limit) * 100)}%)`;
};

export function renderPaidCost(runs: PaidCost[]): string {
  const goalOf = (rate: number) => (rate >= 1000 ? goals.saturated : goals.lone);
  const idle = runs[0]?.idle_cores;
  const lines = [
    "### The cost of a paid order (issue 38)",
    "",
    "CPU per paid order from /proc, the idle rate's share taken off (with it in brackets); a private PostgreSQL (fsync on) and nats-server; load average at the end of each window.",
    "",
    `The machine's limit at that cost: its ${cores} cores, less the idle rate, divided by the CPU of one paid order (the share of the limit the rate uses beside it).`,
    "",
    "| rate | api / payments / NATS / PostgreSQL ms | total ms | goal | cores busy | limit at this cost | accepted → paid p50 / p99 ms | lost | load |",
    "|---|---|---|---|---|---|---|---|---|",
    ...runs.map(
      (run) =>
        `| ${run.rate_per_s}/s | ${cpuCells(run)} | ${ms(run.cpu_ms.total)} (${ms(run.cpu_ms_with_idle)}) | ≤ ${goalOf(run.rate_per_s)}: ${verdict(run.cpu_ms.total <= goalOf(run.rate_per_s))} | ${ms(run.cores_busy)} | ${limitCell(run)} | ${ms(run.paid_p50_ms)} / ${ms(run.paid_p99_ms)} | ${run.lost} | ${run.load_average} |`,
    ),
    "",
    idle
      ? `Idle: ${idle.total} cores (api ${idle.api}, payments ${idle.payments}, NATS ${idle.nats}, PostgreSQL ${idle.postgres}); goal ≤ ${goals.idleCores}: ${verdict(idle.total <= goals.idleCores)}.`
      : "",
    "",
    "Per paid order:",
    "",
    "| rate | statements | commits | WAL records | WAL fsyncs | rows read | rows written | seq scans (rows) | NATS msgs in / out |",
    "|---|---|---|---|---|---|---|---|---|",
    ...runs.map(
      (run) =>
        `| ${run.rate_per_s}/s | ${run.statements} | ${run.commits} | ${run.wal_records} | ${run.wal_fsyncs} | ${run.rows_read} | ${run.rows_written} | ${run.seq_scans} (${run.seq_rows_read}) | ${run.nats_messages_in} / ${run.nats_messages_out} |`,
    ),
  ];
  for (const run of runs.slice(0, 1)) {
    lines.push(
      "",
      `Sequential scans per paid order at ${run.rate_per_s}/s: ${
        run.seq_scans_by_table.map((t) => `${t.table} ${t.scans} (${t.rows} rows)`).join(", ") ||
        "none"
      }.`,
      "",
      `PostgreSQL's time per paid order by statement at ${run.rate_per_s}/s (µs, calls):`,
      "",
      "| µs | calls | statement |",
      "|---|---|---|",
      ...run.top_statements.map(
        (s) => `| ${s.exec_us} | ${s.per_order} | \`${s.query.replaceAll("|", "\\|")}\` |`,
      ),
    );
  }
  return lines.join("\n");
}

export function renderPaidHistory(runs: (PaidCost & { history: number; seed_s: number })[]) {
  const first = runs[0];
  const flat = (pick: (run: PaidCost) => number) =>
    runs.every((run) => pick(run) <= Math.max(pick(first), 0.01) * goals.historyFlat);
  return [
    "### A paid order against the shop's history (issue 38)",
    "",
    "500 orders paid at 50/s on a private stack after `history` orders written as the paid path leaves them; per paid order, the idle rate's share taken off.",
    "",
    "| history | api / payments / NATS / PostgreSQL ms | total ms | statements | rows read | seq scans (rows) | commits | load |",
    "|---|---|---|---|---|---|---|---|",
    ...runs.map(
      (run) =>
        `| ${run.history.toLocaleString("en")} | ${cpuCells(run)} | ${ms(run.cpu_ms.total)} | ${run.statements} | ${run.rows_read} | ${run.seq_scans} (${run.seq_rows_read}) | ${run.commits} | ${run.load_average} |`,
    ),
    "",
    `Flat within ${goals.historyFlat}× of the first: CPU ${verdict(flat((r) => r.cpu_ms.total))}, statements ${verdict(flat((r) => r.statements))}, rows read ${verdict(flat((r) => r.rows_read))}.`,
  ].join("\n");
}

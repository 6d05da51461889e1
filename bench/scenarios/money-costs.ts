/**
 * Issue 38, item 6: the costs of this round's money work, each part on a private stack of its own
 * with the local Stripe and Adyen API servers (bench/money-costs.ts measures):
 *
 *   BENCH_ONLY=money-costs npm run bench
 *
 * BENCH_REFUNDS (200 per provider: half one after another, half 4 in flight), BENCH_RECONCILE_STORED
 * (100000 stored notifications), BENCH_RECONCILE_AT_STRIPE (10000 of them Stripe holds),
 * BENCH_ANTI_ENTROPY_HISTORY (10000,100000,1000000 orders) pick smaller runs.
 */
import { writePaidHistory } from "@commerce/testing/paid-history";
import { type PrivateStack, startPrivateStack } from "@commerce/testing/private-stack";
import type { Outcome } from "../context";
import { runDir, settings } from "../context";
import { ms, verdict } from "../format";
import { say } from "../harness";
import {
  type AntiEntropyCost,
  antiEntropyEnv,
  idleRate,
  type LocalProviders,
  localProviders,
  measureAntiEntropy,
  measureReconciliation,
  measureRefunds,
  paidThroughAdyen,
  paidThroughStripe,
  type ReconciliationCost,
  type RefundCost,
} from "../money-costs";

const goals = { antiEntropyFlat: 1.5 };
const refundCount = Number(process.env.BENCH_REFUNDS ?? 200);
const refundsInFlight = 4;
const stored = Number(process.env.BENCH_RECONCILE_STORED ?? 100_000);
/**
 * A tenth of them: since the objects run asks a page's PaymentIntents at once by the
 * (provider, payment_ref) index, 10,000 take ~1 s of objects run here. All 100,000 would take ~3
 * minutes, nearly all of it the local Stripe server's lists (each page filters and sorts every
 * item it holds: quadratic in the items), not payments or PostgreSQL.
 */
const atStripe = Number(process.env.BENCH_RECONCILE_AT_STRIPE ?? 10_000);
const histories = (process.env.BENCH_ANTI_ENTROPY_HISTORY ?? "10000,100000,1000000")
  .split(",")
  .map(Number);
/** Checks measured per history size (the timer's, one a second). */
const checks = 10;

async function withStack<T>(
  name: string,
  env: Record<string, string>,
  run: (stack: PrivateStack) => Promise<T>,
): Promise<T> {
  const dir = `${runDir}/${name}`;
  await Bun.$`mkdir -p ${dir}`;
  const stack = await startPrivateStack(dir, { fromSources: settings.useSources, env });
  try {
    return await run(stack);
  } finally {
    await stack.stop();
  }
}

async function withProvidersStack<T>(
  name: string,
  env: Record<string, string>,
  run: (stack: PrivateStack, providers: LocalProviders) => Promise<T>,
): Promise<T> {
  const providers = await localProviders();
  try {
    return await withStack(name, { ...providers.env, ...env }, (stack) => run(stack, providers));
  } finally {
    await providers.stop();
  }
}

export type MoneyCosts = {
  refunds: RefundCost[];
  reconciliation: ReconciliationCost;
  anti_entropy: AntiEntropyCost[];
};

export async function moneyCostsRow(): Promise<Outcome> {
  // No timers of reconciliation or anti-entropy beside the refunds.
  const quiet = { RECONCILE_INTERVAL_SECONDS: "0", ANTI_ENTROPY_INTERVAL_SECONDS: "0" };
  const refunds = await withProvidersStack("money-refunds", quiet, async (stack, providers) => {
    say("money costs: the idle rate, 10 s with no traffic");
    const idle = await idleRate(stack, 10);
    const runs: RefundCost[] = [];
    const payThrough = {
      stripe: (count: number) => paidThroughStripe(stack, providers.stripeApi, count),
      adyen: (count: number) => paidThroughAdyen(stack, providers.adyenApi, count),
    };
    for (const [provider, pay] of Object.entries(payThrough)) {
      say(`money costs: ${refundCount + 20} orders paid through ${provider}'s webhook`);
      const paid = await pay(refundCount + 20);
      // A few first, so the JIT and the pools are warm before a window is measured.
      await measureRefunds(stack, provider, paid.slice(0, 20), 1, idle);
      const half = Math.floor(refundCount / 2);
      for (const [ids, inFlight] of [
        [paid.slice(20, 20 + half), 1],
        [paid.slice(20 + half), refundsInFlight],
      ] as const) {
        say(`money costs: ${ids.length} ${provider} refunds, ${inFlight} in flight`);
        const run = await measureRefunds(stack, provider, ids, inFlight, idle);
        say(
          `money costs: ${provider} refund to succeeded p50 ${run.succeeded_p50_ms} / p99 ${run.succeeded_p99_ms} ms, ${run.cpu_ms.total} ms CPU per refund (load ${run.load_average})`,
        );
        runs.push(run);
      }
    }
    return runs;
  });

  const reconciliation = await withProvidersStack(
    "money-reconciliation",
    { RECONCILE_INTERVAL_SECONDS: "1", ANTI_ENTROPY_INTERVAL_SECONDS: "0" },
    async (stack, providers) => {
      say(`money costs: ${stored} stored notifications, ${atStripe} of them held by Stripe`);
      const run = await measureReconciliation(stack, providers.stripeApi, stored, atStripe);
      say(
        `money costs: reconciliation ${run.wall_s} s, ${run.statements} statements, ${run.rows_read} rows read (load ${run.load_average})`,
      );
      return run;
    },
  );

  const antiEntropy: AntiEntropyCost[] = [];
  for (const history of histories)
    antiEntropy.push(
      await withStack(`money-anti-entropy-${history}`, antiEntropyEnv, async (stack) => {
        say(`money costs: writing ${history} orders of history`);
        const seeded = performance.now();
        await writePaidHistory(stack.sql, history);
        const seedS = Math.round((performance.now() - seeded) / 100) / 10;
        const run = await measureAntiEntropy(stack, history, seedS, checks);
        say(
          `money costs: anti-entropy at ${history}: ${run.statements} statements, ${run.rows_read} rows read, ${run.cpu_ms.total} ms CPU per check (load ${run.load_average})`,
        );
        return run;
      }),
    );

  const results: MoneyCosts = { refunds, reconciliation, anti_entropy: antiEntropy };
  return { files: { "money-costs.json": results }, print: renderMoneyCosts(results) };
}

const cpuCells = (cpu: RefundCost["cpu_ms"]) =>
  `${ms(cpu.api)} / ${ms(cpu.payments)} / ${ms(cpu.nats)} / ${ms(cpu.postgres)}`;

export function renderMoneyCosts({ refunds, reconciliation: rec, anti_entropy }: MoneyCosts) {
  const first = anti_entropy[0];
  const flat = (pick: (run: AntiEntropyCost) => number) =>
    anti_entropy.every((run) => pick(run) <= Math.max(pick(first), 0.01) * goals.antiEntropyFlat);
  const ratio = (pick: (run: AntiEntropyCost) => number) =>
    (Math.max(...anti_entropy.map(pick)) / Math.max(pick(first), 0.01)).toFixed(2);
  const flatCell = (name: string, pick: (run: AntiEntropyCost) => number) =>
    `${name} ${ratio(pick)}× ${verdict(flat(pick))}`;
  return [
    "### A refund, a reconciliation run, the anti-entropy check (issue 38)",
    "",
    "Private PostgreSQL (fsync on) and nats-server, the local Stripe and Adyen API servers (test/harness/providers) in the bench's process as STRIPE_API_URL and ADYEN_CHECKOUT_URL.",
    "",
    "Refunds asked through `POST /api/orders/{id}/refunds` (in full, admin token) of orders paid through the provider's webhook; the 202 answer → the api's `orders.refunded` (the refund `succeeded`: Stripe's answer, Adyen's REFUND notification, which its local server sends at once); CPU per refund from /proc, the idle rate's share taken off; the bench's own CPU (the provider's server and the client) beside.",
    "",
    "| provider | in flight | refunds | succeeded p50 / p99 ms | api / payments / NATS / PostgreSQL ms | total ms | bench ms | statements | commits | rows read | lost | load |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ...refunds.map(
      (run) =>
        `| ${run.provider} | ${run.in_flight} | ${run.refunds} | ${ms(run.succeeded_p50_ms)} / ${ms(run.succeeded_p99_ms)} | ${cpuCells(run.cpu_ms)} | ${ms(run.cpu_ms.total)} | ${ms(run.bench_cpu_ms)} | ${run.statements} | ${run.commits} | ${run.rows_read} | ${run.lost} | ${run.load_average} |`,
    ),
    "",
    `One Stripe reconciliation run (its \`events\` run, then its \`objects\` run) over a first run's 30-day window: ${rec.stored.toLocaleString("en")} stored notifications, the newest ${rec.at_stripe.toLocaleString("en")} of them payments whose events and PaymentIntents Stripe holds (each PaymentIntent in the window an index lookup: its page's are asked in one statement, see the statements below); written in ${rec.seed_s} s.`,
    "",
    "| run | checked | found | ms |",
    "|---|---|---|---|",
    ...rec.runs.map(
      (run) => `| ${run.kind} | ${run.checked} | ${run.found} | ${run.duration_ms} |`,
    ),
    "",
    `Both: ${rec.wall_s} s from the first's start to the last's end; ${rec.statements.toLocaleString("en")} statements (${ms(rec.postgres_exec_ms)} ms in PostgreSQL), ${rec.rows_read.toLocaleString("en")} rows read, ${rec.commits} commits, ${rec.list_requests} list requests to Stripe; CPU api / payments / NATS / PostgreSQL ${cpuCells(rec.cpu_ms)} ms, the bench's (Stripe's server) ${ms(rec.bench_cpu_ms)} ms (PostgreSQL's misses parallel workers that exited: read its time in statements); payments' RSS ${rec.payments_rss_mib.before} → ${rec.payments_rss_mib.after} MiB (load ${rec.load_average}).`,
    "",
    `PostgreSQL's time by statement over the runs (µs, calls): ${rec.top_statements
      .slice(0, 4)
      .map((s) => `${s.exec_us} µs, ${s.per}× \`${s.query.replaceAll("|", "\\|")}\``)
      .join("; ")}.`,
    "",
    `The anti-entropy check (B2) every second, with 200 orders just paid in its window, against \`history\` orders written as the paid path leaves them; per check, ${checks} checks in a row, a second of the stack's idle work included.`,
    "",
    "| history | compared | statements | rows read | PostgreSQL ms | api / payments / NATS / PostgreSQL CPU ms | total ms | load |",
    "|---|---|---|---|---|---|---|---|",
    ...anti_entropy.map(
      (run) =>
        `| ${run.history.toLocaleString("en")} | ${run.checked_per_check} | ${run.statements} | ${run.rows_read} | ${ms(run.postgres_exec_ms)} | ${cpuCells(run.cpu_ms)} | ${ms(run.cpu_ms.total)} | ${run.load_average} |`,
    ),
    "",
    `Flat within ${goals.antiEntropyFlat}× of the first (largest / first): ${[
      flatCell("statements", (r) => r.statements),
      flatCell("rows read", (r) => r.rows_read),
      flatCell("PostgreSQL time", (r) => r.postgres_exec_ms),
      flatCell("api + payments CPU", (r) => r.cpu_ms.api + r.cpu_ms.payments),
    ].join(", ")}.`,
  ].join("\n");
}

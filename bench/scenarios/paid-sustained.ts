/**
 * Issue 38's sustained row, on a private stack of its own (bench/paid-sustained.ts measures):
 * orders created beforehand, paid from an open loop at BENCH_SUSTAINED_RATE a second (default
 * 1,000) for BENCH_SUSTAINED_SECONDS (default 600), figures every BENCH_SUSTAINED_BUCKET seconds
 * (default 60, 10 for runs under 5 minutes), then a drain of at most BENCH_SUSTAINED_DRAIN
 * seconds (default 120).
 *
 *   BENCH_ONLY=paid-sustained npm run bench                                  # ~13 min
 *   BENCH_ONLY=paid-sustained BENCH_SUSTAINED_RATE=500 BENCH_SUSTAINED_SECONDS=60 npm run bench
 *
 * A lower rate finds the highest one the machine holds (paid p99 in goal, no backlog growing).
 */
import { mode, type Outcome } from "../context";
import { durabilityOf, renderDurability } from "../durability";
import { ms as milliseconds, verdict } from "../format";
import { say } from "../harness";
import { unpaidOrders } from "../paid-cost";
import { measureSustained, type Sustained } from "../paid-sustained";
import { withStack } from "./paid-orders";

/** ∞: not paid (or told) by the drain's deadline. */
const ms = (value: number) => (value === Infinity ? "∞" : milliseconds(value));
const goals = { paidP99: 100, toldP99: 500, rssGrowth: 1.2 };
const rate = Number(process.env.BENCH_SUSTAINED_RATE ?? 1000);
const seconds = Number(process.env.BENCH_SUSTAINED_SECONDS ?? 600);
const bucketS = Number(process.env.BENCH_SUSTAINED_BUCKET ?? (seconds >= 300 ? 60 : 10));
const drainS = Number(process.env.BENCH_SUSTAINED_DRAIN ?? 120);
/** The sender's keep-alive connections (bench/paid-sustained.ts's keepAliveClient). */
const connections = Number(process.env.BENCH_SUSTAINED_CONNECTIONS ?? 64);

export async function paidSustainedRow(): Promise<Outcome> {
  const { durability, run } = await withStack("paid-sustained", async (stack) => {
    const durability = await durabilityOf(stack);
    const count = Math.round(rate * seconds);
    say(`paid sustained: creating ${count} unpaid orders`);
    const orders: { order_id: number; amount: number; currency: string }[] = [];
    // In slices, so no statement carries hundreds of thousands of ids at once.
    for (let made = 0; made < count; made += 50_000)
      for (const order of await unpaidOrders(stack, Math.min(50_000, count - made)))
        orders.push(order);
    await stack.sql`vacuum analyze api.orders`;
    // Warm: the JIT and the pools, at a tenth of the rate for 3 s, not measured.
    const warm = await unpaidOrders(stack, Math.max(10, Math.round(rate * 0.3)));
    await measureSustained(stack, warm, { rate: rate / 10, seconds: 3, bucketS: 3, drainS: 30 });
    await Bun.sleep(2000);
    say(`paid sustained: ${rate}/s for ${seconds} s, figures every ${bucketS} s`);
    const run = await measureSustained(stack, orders, {
      rate,
      seconds,
      bucketS,
      drainS,
      connections,
    });
    say(
      `paid sustained: held ${run.held_per_s}/s, paid p99 ${run.paid_p99_ms} ms, told p99 ` +
        `${run.told_p99_ms} ms, lost ${run.lost} (load ${run.load_average.end})`,
    );
    return { durability, run };
  });
  return {
    files: { "paid-sustained.json": { durability, mode, run } },
    print: `${renderDurability(durability)}\n${renderPaidSustained(run)}`,
  };
}

const flat = (rss: { first_bucket: number; end: number }) =>
  rss.end <= rss.first_bucket * goals.rssGrowth;

export function renderPaidSustained(run: Sustained): string {
  const memoryFlat = flat(run.rss_mib.api) && flat(run.rss_mib.payments);
  const unit = run.bucket_s === 60 ? "minute" : `${run.bucket_s} s`;
  return [
    "### Paid orders sustained (issue 38)",
    "",
    `${run.orders.toLocaleString("en")} orders created beforehand, paid by signed notifications from an open loop at ${run.rate_per_s}/s for ${run.seconds} s over ${connections} keep-alive connections on a private stack; then a drain of at most ${run.drain_deadline_s} s (an order not paid or told by then counts as infinitely late in the p99s). Per ${unit}: counts in it, latencies of the orders accepted in it, backlog (sent, not yet paid; of it, not yet answered; of those, waiting in the sender for a connection) and RSS at its end, CPU of api + payments + NATS + PostgreSQL per order paid in it, the bench process's CPU (sender, receiver, subscription) per order sent. Load average ${run.load_average.start} at the start, ${run.load_average.end} at the end.`,
    "",
    "| s | sent | accepted | paid | told | → paid p50 / p99 ms | → told p50 / p99 ms | backlog: sent, not paid (not answered; of them queued) | RSS api / payments MiB | CPU ms / paid | cores | bench µs / sent |",
    "|---|---:|---:|---:|---:|---|---|---|---|---:|---:|---:|",
    ...run.buckets.map(
      (b) =>
        `| ${Math.round(b.from_s)}-${Math.round(b.to_s)} | ${b.sent} | ${b.accepted} | ${b.paid} | ${b.told} | ${ms(b.paid_p50_ms)} / ${ms(b.paid_p99_ms)} | ${ms(b.told_p50_ms)} / ${ms(b.told_p99_ms)} | ${b.backlog} (${b.unanswered}; ${b.queued}) | ${b.rss_api_mib} / ${b.rss_payments_mib} | ${ms(b.cpu_ms_per_paid)} | ${ms(b.cores_busy)} | ${b.bench_cpu_us_per_sent} |`,
    ),
    "",
    `Held: ${run.held_per_s} paid orders a second while sending at ${run.rate_per_s}/s; backlog ${run.backlog_at_end_of_sending} when sending stopped, drained ${ms(run.drained_s)} s after (deadline ${run.drain_deadline_s} s). Sent on the clock ${run.sent}, accepted ${run.accepted}, refused or failed ${run.refused}, still queued in the sender when sending stopped (dropped, never sent) ${run.dropped}, paid ${run.paid}, told ${run.told}. Sent → paid (with the wait in the sender's queue) p50 ${ms(run.sent_paid_p50_ms)} / p99 ${ms(run.sent_paid_p99_ms)} ms; the sender's worst lateness against its clock ${ms(run.sender_late_max_ms)} ms.`,
    "",
    "| goal | target | measured | verdict |",
    "|---|---|---|---|",
    `| sustained: accepted → orders.paid p99 | ≤ ${goals.paidP99} ms | ${ms(run.paid_p99_ms)} ms (p50 ${ms(run.paid_p50_ms)}) | ${verdict(run.paid_p99_ms <= goals.paidP99)} |`,
    `| sustained: accepted → receiver told p99 | ≤ ${goals.toldP99} ms | ${ms(run.told_p99_ms)} ms (p50 ${ms(run.told_p50_ms)}) | ${verdict(run.told_p99_ms <= goals.toldP99)} |`,
    `| sustained: lost (accepted, not paid within the drain) | 0 | ${run.lost} (not told: ${run.untold}) | ${verdict(run.lost === 0)} |`,
    `| sustained: memory flat (RSS at the end within ${goals.rssGrowth}× of the first ${unit}'s end) | ≤ ${goals.rssGrowth}× | api ${run.rss_mib.api.first_bucket} → ${run.rss_mib.api.end} MiB, payments ${run.rss_mib.payments.first_bucket} → ${run.rss_mib.payments.end} MiB | ${verdict(memoryFlat)} |`,
    `| sustained: the rate held (sent, not paid when sending stopped ≤ one second of it) | ${run.rate_per_s}/s | ${run.held_per_s}/s, backlog ${run.backlog_at_end_of_sending} | ${verdict(run.backlog_at_end_of_sending <= run.rate_per_s)} |`,
    "",
  ].join("\n");
}

/**
 * The burst row (M5): `burstRounds` (3) bursts of `burstCount` notifications, `burstInFlight` at
 * a time, each paying orders placed just before; one burst is measured by ../burst.ts. Its two
 * p99s (accepted → paid, webhook accept) are in goal only when they are in every run (issue 38:
 * 3 of 3).
 *
 *   BENCH_ONLY=burst npm run bench     # the burst row alone
 */
import { messageTopology } from "@commerce/shared/contract/messages";
import { type BurstResult, consumerLagOf, measureBurst } from "../burst";
import {
  connectedNats,
  launch,
  type Outcome,
  pay,
  prefix,
  runDir,
  runId,
  serviceCommand,
  settings,
  startApi,
} from "../context";
import { placeOrders, writeDataFiles } from "../data";
import { ms, verdict } from "../format";
import { paymentsEnv, type Service, say, stop } from "../harness";
import { waitForQuiet } from "../load";

export async function measureBursts(
  api: Service,
  payments: Service,
  tokens: string[],
  productIds: number[],
): Promise<BurstResult[]> {
  const { burstCount, burstInFlight, burstRounds } = settings;
  const nc = connectedNats();
  say(`burst: ${burstCount} notifications, ${burstInFlight} in flight, ${burstRounds} runs`);
  const jsm = await nc.jetstreamManager();
  const topology = messageTopology(prefix.main);
  const bursts: BurstResult[] = [];
  for (let round = 1; round <= burstRounds; round++) {
    const burstOrders = await placeOrders(api, tokens, productIds, burstCount);
    await waitForQuiet();
    const burst = await measureBurst({
      nc,
      subject: topology.orders.event("paid"),
      orders: burstOrders,
      inFlight: burstInFlight,
      notify: (order) => pay(payments, order, `b${round}`),
      consumerLag: consumerLagOf(jsm, topology),
    });
    bursts.push(burst);
    say(
      `burst ${round}: ${burst.ingest_rps} accepted/s, webhook p99 ${burst.webhook_p99_ms} ms, ` +
        `accepted -> orders.paid p50 ${burst.paid_p50_ms} ms, p99 ${burst.paid_p99_ms} ms, ` +
        `drained ${burst.drained_after_ms} ms after the last 200`,
    );
  }
  return bursts;
}

/** BENCH_ONLY=burst: the burst row alone. */
export async function burstRow(): Promise<Outcome> {
  const { api, productIds } = await startApi();
  const tokens = await writeDataFiles(runDir, productIds);
  const payments = await launch("payments", serviceCommand("payments"), paymentsEnv(prefix.main));
  const bursts = await measureBursts(api, payments, tokens, productIds);
  await Promise.all([stop(api), stop(payments)]);
  const report = [
    ...burstRows(bursts),
    "| goal | target | measured | verdict |",
    "|---|---|---|---|",
    ...burstGoals(bursts),
  ].join("\n");
  return {
    files: { "results.json": { run: runId, bursts }, "results.md": report },
    print: report,
  };
}

export const burstRows = (bursts: BurstResult[]) => [
  `| burst: notifications at once, ${settings.burstInFlight} in flight | run | accepted/s | webhook p50 ms | webhook p99 ms | → orders.paid p50 ms | → orders.paid p99 ms | max ms | backlog max | drained after last 200, ms | lost | non-200 |`,
  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...bursts.map(
    (b, i) =>
      `| ${b.notifications} | ${i + 1} | ${b.ingest_rps} | ${ms(b.webhook_p50_ms)} | ${ms(b.webhook_p99_ms)} | ${ms(b.paid_p50_ms)} | ${ms(b.paid_p99_ms)} | ${ms(b.paid_max_ms)} | ${b.backlog_max} | ${ms(b.drained_after_ms)} | ${b.lost} | ${b.non200} |`,
  ),
  "",
  "Burst backlog (accepted, not yet orders.paid / consumer pending), every 100 ms:",
  "",
  ...bursts.map(
    (b, i) =>
      `- run ${i + 1}: ${b.lag.map(([at, backlog, pending]) => `${at}:${backlog}/${pending}`).join(" ")}`,
  ),
  "",
];

/** How many runs kept `inGoal`, as "k of n". */
const inGoal = (bursts: BurstResult[], test: (b: BurstResult) => boolean) =>
  `in goal in ${bursts.filter(test).length} of ${bursts.length} runs`;

/** Issue 38: the burst's two p99s (accepted → paid, webhook accept) in goal in every run (3 of 3). */
export const burstGoals = (bursts: BurstResult[]) => {
  const paid = (b: BurstResult) => b.paid_p99_ms <= 100 && b.lost === 0;
  const drained = (b: BurstResult) => b.drained_after_ms <= 1000;
  const webhook = (b: BurstResult) => b.webhook_p99_ms <= 50;
  return [
    `| burst: accepted → orders.paid p99, each run | ≤ 100 ms, none lost, ${bursts.length} of ${bursts.length} runs | ${bursts.map((b) => `${ms(b.paid_p99_ms)} ms`).join(", ")}: ${inGoal(bursts, paid)} | ${verdict(bursts.every(paid))} |`,
    `| burst: backlog at 0 after the last 200, each run | ≤ 1000 ms, ${bursts.length} of ${bursts.length} runs | ${bursts.map((b) => `${ms(b.drained_after_ms)} ms`).join(", ")}: ${inGoal(bursts, drained)} | ${verdict(bursts.every(drained))} |`,
    `| burst: webhook accept p99, each run | ≤ 50 ms, ${bursts.length} of ${bursts.length} runs | ${bursts.map((b) => `${ms(b.webhook_p99_ms)} ms`).join(", ")}: ${inGoal(bursts, webhook)} | ${verdict(bursts.every(webhook))} |`,
  ];
};

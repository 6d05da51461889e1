import type { Verdict } from "./invariants";
import type { Stats } from "./stats";

export type RunFacts = {
  minutes: number;
  /** X5 (v5): the seed of every choice the run made (`--seed` repeats them). */
  seed: number;
  startedAt: Date;
  workloadSeconds: number;
  drainSeconds: number;
  load: number[];
  /** The highest 1-minute load average sampled during the run. */
  peakLoad: number;
  /** Orders cancelled as expired (L3), the workload's unpaid ones and any paid too late. */
  expired: number;
  cores: number;
  /** `--faults`, when the run was limited to some kinds. */
  faults?: string;
  /** Kinds of fault the run had no time for. */
  notReached?: string[];
};

/** X5: the run as markdown: faults with their times, throughput, 503s, PASS/FAIL per invariant. */
export function markdownReport(stats: Stats, verdicts: Verdict[], facts: RunFacts): string {
  const accepted = stats.notifications.filter((n) => n.acceptedAt);
  const first = accepted.filter((n) => !n.duplicate);
  const gaveUp = stats.notifications.filter((n) => n.status === "gave up").length;
  const attempts = stats.notifications.reduce((sum, n) => sum + n.attempts, 0);
  const perProvider = ["generic", "stripe", "adyen"]
    .map((p) => `${p} ${first.filter((n) => n.provider === p).length}`)
    .join(", ");
  const answers = [...stats.answers].sort(([a], [b]) => a.localeCompare(b));
  const all = verdicts.every((v) => v.pass);
  const loaded = Math.max(facts.peakLoad, ...facts.load) > facts.cores * 1.5;
  return [
    "# Chaos run (X5)",
    "",
    `\`npm run chaos -- --minutes ${facts.minutes} --seed ${facts.seed}${facts.faults ? ` --faults "${facts.faults}"` : ""}\`, started ${facts.startedAt.toISOString()}: ` +
      `${facts.workloadSeconds.toFixed(0)} s of workload and faults, then ${facts.drainSeconds.toFixed(0)} s to drain. ` +
      `**${all ? "PASS" : "FAIL"}**.`,
    "",
    `Load average at the end: ${facts.load.map((l) => l.toFixed(2)).join(", ")} (1, 5, 15 min) on ` +
      `${facts.cores} cores; the highest 1-minute figure sampled during the run: ${facts.peakLoad.toFixed(2)}` +
      (loaded
        ? ". The machine was heavily loaded (other work shared its two cores), so times here are longer than on a machine of its own."
        : "."),
    "",
    "## Invariants",
    "",
    "| invariant | result | detail |",
    "| --- | --- | --- |",
    ...verdicts.map((v) => `| ${v.name} | ${v.pass ? "PASS" : "FAIL"} | ${v.detail} |`),
    "",
    ...verdicts
      .filter((v) => !v.pass)
      .flatMap((v) => [
        `Violations of "${v.name}" (first 20):`,
        "",
        ...v.violations.map((x) => `- ${x}`),
        "",
      ]),
    "## Faults injected",
    "",
    "| at | fault | target | back after | note |",
    "| --- | --- | --- | --- | --- |",
    ...stats.faults.map(
      (f) =>
        `| ${stats.clock(f.at)} (${new Date(f.at).toISOString().slice(11, 19)} UTC) | ${f.what} | ${f.target} | ` +
        `${f.backAt ? `${((f.backAt - f.at) / 1000).toFixed(1)} s` : "—"} | ${f.note ?? ""} |`,
    ),
    "",
    ...(facts.notReached?.length
      ? [`Kinds of fault the run did not reach: ${facts.notReached.join(", ")}.`, ""]
      : []),
    "## Workload",
    "",
    `- Orders placed: ${stats.ordersPlaced} (${(stats.ordersPlaced / facts.workloadSeconds).toFixed(1)}/s); ` +
      `refused for stock: ${stats.ordersRefusedNoStock}; cancelled by the customer: ${stats.ordersCancelled}; ` +
      `left unpaid to expire: ${stats.ordersLeftUnpaid} (orders expired by the end: ${facts.expired}); ` +
      `placing failed after retries: ${stats.placeFailed}.`,
    `- Notifications accepted: ${first.length} (${perProvider}; ${(first.length / facts.workloadSeconds).toFixed(1)}/s), ` +
      `of which refunds ${first.filter((n) => n.kind === "refund").length} and second payments ` +
      `${first.filter((n) => n.kind === "second payment").length}; duplicates re-sent and accepted: ` +
      `${accepted.length - first.length}; given up after 3 min: ${gaveUp}; HTTP attempts: ${attempts}.`,
    `- Refunds asked through \`POST /api/orders/{id}/refunds\` (F1): ${stats.refunds.length} accepted ` +
      `(${(["full", "partial", "rest"] as const)
        .map((k) => `${k} ${stats.refunds.filter((r) => r.kind === k).length}`)
        .join(", ")}; Stripe ${stats.refunds.filter((r) => r.provider === "stripe").length}, ` +
      `Adyen ${stats.refunds.filter((r) => r.provider === "adyen").length}); answers in the end: ` +
      `${[...stats.refundAnswers].map(([status, n]) => `${status} ${n}`).join(", ") || "none"}. ` +
      `Refund requests at the provider servers that met an outage's fault: ` +
      `${[...stats.providerFaults].map(([kind, n]) => `${kind} ${n}`).join(", ") || "none"}.`,
    `- Payments never notified (B1): Stripe ${stats.unnotified.filter((u) => u.provider === "stripe").length}, ` +
      `Adyen ${stats.unnotified.filter((u) => u.provider === "adyen").length}; Adyen payment accounting reports ` +
      `announced with REPORT_AVAILABLE: ${stats.reports.length} (every 30 s and once at the end; ` +
      `the last with ${stats.reports.at(-1)?.lines ?? 0} lines).`,
    `- Payment messages deleted from the stream after JetStream's ack: ${stats.lostPayments.length} ` +
      `(money_path_gaps_found_total grew by ${stats.gapsCounted} across those faults).`,
    "",
    "## Answers (every attempt, by service and status)",
    "",
    "| service and status | count |",
    "| --- | --- |",
    ...answers.map(([key, n]) => `| ${key} | ${n} |`),
    "",
  ].join("\n");
}

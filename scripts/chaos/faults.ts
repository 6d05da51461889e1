import type { ProviderFault } from "@commerce/testing/providers/provider-server";
import type postgres from "postgres";
import type { Providers } from "./provider";
import { pick, random } from "./random";
import type { Stats } from "./stats";
import type { ChaosSystem } from "./system";

/** What a fault may use besides the system: the workload's providers and the database. */
export type FaultContext = { providers: Providers; sql: postgres.Sql };

export type Kind =
  | "api replica"
  | "payments"
  | "NATS node"
  | "PostgreSQL primary"
  | "paused api replica"
  | "paused NATS node"
  | "paused PostgreSQL primary"
  | "acknowledged messages lost"
  | "provider APIs failing";
export const kinds: Kind[] = [
  "api replica",
  "payments",
  "NATS node",
  "PostgreSQL primary",
  "paused api replica",
  "paused NATS node",
  "paused PostgreSQL primary",
  "acknowledged messages lost",
  "provider APIs failing",
];

/**
 * X5 (v5), B4, F3: how long the local Stripe and Adyen APIs fail: longer than payments' circuit
 * (five calls without an answer open it for 30 s), so the circuit opens and closes again.
 */
const providerOutageMs = 40_000;

/**
 * What a refund request meets during a provider outage: a 503 (nothing done), a timeout past
 * payments' 10 s call timeout with or without the refund made, or the refund made and the
 * connection reset before its answer (an answer lost after the provider acted: F2's idempotency
 * key must make the retry return that refund, not a second one).
 */
function outageFault(): { name: string; fault: ProviderFault } {
  const r = random();
  if (r < 0.4) return { name: "503", fault: { kind: "status", status: 503 } };
  if (r < 0.6) return { name: "timeout", fault: { kind: "timeout", ms: 15_000, made: false } };
  if (r < 0.8)
    return { name: "timeout after the refund", fault: { kind: "timeout", ms: 15_000, made: true } };
  return { name: "answer lost after the refund", fault: { kind: "reset", made: true } };
}

/**
 * X5 (v5): longer than every timeout of the part paused: the payment consumer's 30 s ack wait (so
 * JetStream hands a paused replica's messages to the other one), NATS's pings and Patroni's 10 s
 * TTL (so a standby is promoted under a primary that is only asleep).
 */
const pauseMs = 35_000;

const shuffled = <T>(list: T[]) =>
  list
    .map((value) => ({ value, sort: random() }))
    .sort((a, b) => a.sort - b.sort)
    .map(({ value }) => value);

/**
 * X5: one fault at a time, at random moments (`gapMs` apart, ± half), each kind once in every
 * round: SIGKILL an api replica, payments, a NATS node or PostgreSQL's primary (Patroni's leader)
 * and bring it back after a few seconds; (v5) pause an api replica, a NATS node or the primary
 * (SIGSTOP for longer than every timeout, then SIGCONT); delete from the payments stream messages
 * JetStream had acknowledged, before the api consumed them (B2 must find and re-publish them).
 */
export async function injectFaults(
  system: ChaosSystem,
  stats: Stats,
  until: () => boolean,
  gapMs: number,
  context: FaultContext,
  only: Kind[] = kinds,
): Promise<void> {
  let round: Kind[] = [];
  await Bun.sleep(gapMs * (0.5 + random()));
  while (!until()) {
    if (!round.length) round = shuffled(only);
    const kind = round.shift() as Kind;
    stats.kindsRun.add(kind);
    try {
      await inject(system, stats, kind, context);
    } catch (error) {
      stats.fault("could not restore", kind, String(error).slice(0, 200));
    }
    await Bun.sleep(gapMs * (0.5 + random()));
  }
}

async function inject(
  system: ChaosSystem,
  stats: Stats,
  kind: Kind,
  context: FaultContext,
): Promise<void> {
  const down = () => Bun.sleep(2_000 + random() * 4_000);
  switch (kind) {
    case "api replica":
    case "payments": {
      const service = kind === "payments" ? system.payments : pick(system.apis);
      const fault = stats.fault("SIGKILL", service.name);
      await service.stop("SIGKILL");
      await down();
      await service.start();
      fault.backAt = Date.now();
      return;
    }
    case "NATS node": {
      const i = Math.floor(random() * system.nats.length);
      const fault = stats.fault("SIGKILL", `nats n${i + 1}`);
      await system.nats[i].stop("SIGKILL");
      await down();
      await system.nats[i].start();
      fault.backAt = Date.now();
      return;
    }
    case "PostgreSQL primary": {
      const leader = await system.cluster.waitForLeader();
      const fault = stats.fault("SIGKILL", `postgres primary ${leader}`);
      await system.cluster.killLeader(leader);
      const promoted = await system.cluster.waitForLeader(leader);
      fault.note = `${promoted} promoted after ${((Date.now() - fault.at) / 1000).toFixed(1)} s`;
      console.log(`[chaos] ${stats.clock(Date.now())} ${fault.note}`);
      // The killed node comes back as a replica of the new leader.
      await system.cluster.rejoin(leader);
      fault.backAt = Date.now();
      return;
    }
    case "paused api replica": {
      const service = pick(system.apis);
      const fault = stats.fault("SIGSTOP", service.name, `${pauseMs / 1000} s, then SIGCONT`);
      process.kill(service.pid, "SIGSTOP");
      await Bun.sleep(pauseMs);
      process.kill(service.pid, "SIGCONT");
      fault.backAt = Date.now();
      return;
    }
    case "paused NATS node": {
      const i = Math.floor(random() * system.nats.length);
      const fault = stats.fault("SIGSTOP", `nats n${i + 1}`, `${pauseMs / 1000} s, then SIGCONT`);
      system.nats[i].signal("SIGSTOP");
      await Bun.sleep(pauseMs);
      system.nats[i].signal("SIGCONT");
      fault.backAt = Date.now();
      return;
    }
    case "paused PostgreSQL primary": {
      const leader = await system.cluster.waitForLeader();
      const fault = stats.fault("SIGSTOP", `postgres primary ${leader}`, "");
      await system.cluster.pauseNode(leader);
      const promoted = await system.cluster
        .waitForLeader(leader, pauseMs)
        .catch(() => "no other node");
      const left = pauseMs - (Date.now() - fault.at);
      if (left > 0) await Bun.sleep(left);
      system.cluster.resumeNode(leader);
      fault.note = `${promoted} promoted while it slept; woken after ${pauseMs / 1000} s`;
      // Woken, Patroni finds its key taken and demotes it; failing that, it is cloned afresh.
      await system.cluster.waitHealthy(60_000).catch(() => system.cluster.rejoin(leader));
      fault.backAt = Date.now();
      console.log(`[chaos] ${stats.clock(Date.now())} ${leader}: ${fault.note}`);
      return;
    }
    case "acknowledged messages lost":
      return loseAcknowledgedMessages(system, stats, context);
    case "provider APIs failing": {
      const fault = stats.fault(
        "provider APIs failing",
        "Stripe and Adyen",
        `${providerOutageMs / 1000} s of 503s, timeouts and answers lost after the refund; Stripe's lists 503, Adyen's reports unreachable`,
      );
      let met = 0;
      const pickFault = () => {
        const { name, fault } = outageFault();
        met++;
        stats.providerFaults.set(name, (stats.providerFaults.get(name) ?? 0) + 1);
        return fault;
      };
      system.stripeApi.server.startOutage(pickFault);
      system.adyenApi.server.startOutage(pickFault);
      // B4: Stripe's lists answer 503 and Adyen's report files are unreachable meanwhile, so
      // reconciliation runs fail, and the next good run covers the gap.
      system.stripeApi.down({ kind: "status", status: 503 });
      await system.adyenReports.down();
      await Bun.sleep(providerOutageMs);
      system.stripeApi.server.endOutage();
      system.adyenApi.server.endOutage();
      system.stripeApi.up();
      await system.adyenReports.up();
      fault.backAt = Date.now();
      fault.note += `; ${met} refund requests met a fault`;
      return;
    }
  }
}

/**
 * X5 (v5), B2: both api replicas are paused for longer than a pull request lives (2 s), then
 * orders the workload kept unpaid (the pool) are paid, so payments publishes their messages and
 * JetStream acknowledges them while no consumer is there to take them; up to three of those are
 * deleted from the stream, and the replicas are woken. The fault lasts until the api has applied
 * each deleted payment (B2 publishes it again within 60 s of its publication) or 120 s, and notes
 * how much `money_path_gaps_found_total` grew meanwhile (no other fault runs, so payments is not
 * restarted in between).
 */
async function loseAcknowledgedMessages(
  system: ChaosSystem,
  stats: Stats,
  { providers, sql }: FaultContext,
): Promise<void> {
  const fault = stats.fault("deleted after ack", "payments stream");
  const gapsBefore = await system.paymentsMetric("money_path_gaps_found_total");
  for (const api of system.apis) process.kill(api.pid, "SIGSTOP");
  let lost: Awaited<ReturnType<ChaosSystem["loseRecentPaymentMessages"]>> = [];
  let paid = 0;
  try {
    await Bun.sleep(3_000);
    paid = await Promise.race([providers.payPooled(5), Bun.sleep(15_000).then(() => 0)]);
    lost = await system.loseRecentPaymentMessages(3);
  } finally {
    for (const api of system.apis) process.kill(api.pid, "SIGCONT");
  }
  fault.backAt = Date.now();
  if (!lost.length) {
    fault.note = `none unconsumed at that moment (${paid} pooled orders paid while paused)`;
    return;
  }
  const records = lost.map((m) => ({ ...m, appliedAt: undefined as number | undefined }));
  stats.lostPayments.push(...records);
  const deadline = Date.now() + 120_000;
  while (records.some((r) => r.appliedAt === undefined) && Date.now() < deadline) {
    const ids = records.filter((r) => r.appliedAt === undefined).map((r) => r.notificationId);
    const rows = await sql`select notification_id, processed_at from api.processed_notifications
      where notification_id = any(${ids})`.catch(() => []);
    for (const row of rows) {
      const record = records.find((r) => r.notificationId === row.notification_id);
      if (record) record.appliedAt = new Date(row.processed_at).getTime();
    }
    await Bun.sleep(1_000);
  }
  const gapsAfter = await system.paymentsMetric("money_path_gaps_found_total");
  const grew =
    gapsBefore === undefined || gapsAfter === undefined ? undefined : gapsAfter - gapsBefore;
  stats.gapsCounted += grew ?? 0;
  const applied = records
    .map(
      (r) =>
        `seq ${r.seq} (order ${r.orderId}) ${
          r.appliedAt === undefined
            ? "not applied within 120 s"
            : `applied ${((r.appliedAt - r.publishedAt) / 1000).toFixed(1)} s after publication`
        }`,
    )
    .join("; ");
  fault.note =
    `${lost.length} deleted of ${paid} pooled orders paid with both api replicas paused: ${applied}; ` +
    `money_path_gaps_found_total +${grew ?? "unknown (payments not answering)"}`;
  console.log(`[chaos] ${stats.clock(Date.now())} ${fault.note}`);
}

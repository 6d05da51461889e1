import { pick, random } from "./random";
import type { Stats } from "./stats";
import type { ChaosSystem } from "./system";

type Kind =
  | "api replica"
  | "payments"
  | "NATS node"
  | "PostgreSQL primary"
  | "paused api replica"
  | "paused NATS node"
  | "paused PostgreSQL primary"
  | "acknowledged messages lost";
const kinds: Kind[] = [
  "api replica",
  "payments",
  "NATS node",
  "PostgreSQL primary",
  "paused api replica",
  "paused NATS node",
  "paused PostgreSQL primary",
  "acknowledged messages lost",
];

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
): Promise<void> {
  let round: Kind[] = [];
  await Bun.sleep(gapMs * (0.5 + random()));
  while (!until()) {
    if (!round.length) round = shuffled(kinds);
    const kind = round.shift() as Kind;
    try {
      await inject(system, stats, kind);
    } catch (error) {
      stats.fault("could not restore", kind, String(error).slice(0, 200));
    }
    await Bun.sleep(gapMs * (0.5 + random()));
  }
}

async function inject(system: ChaosSystem, stats: Stats, kind: Kind): Promise<void> {
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
    case "acknowledged messages lost": {
      // The api consumes within milliseconds: its replicas are paused for longer than a pull
      // request lives (2 s), so what payments publishes meanwhile is acknowledged and not yet
      // handed out; up to three of those are deleted, then the replicas are woken.
      const fault = stats.fault("deleted after ack", "payments stream");
      for (const api of system.apis) process.kill(api.pid, "SIGSTOP");
      try {
        await Bun.sleep(4_000);
        const lost = await system.loseRecentPaymentMessages(3);
        fault.note = lost.length
          ? `sequences ${lost.join(", ")}, with both api replicas paused 4 s`
          : "none unconsumed at that moment";
      } finally {
        for (const api of system.apis) process.kill(api.pid, "SIGCONT");
      }
      fault.backAt = Date.now();
      return;
    }
  }
}

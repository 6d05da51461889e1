import type { Stats } from "./stats";
import type { ChaosSystem } from "./system";

type Kind = "api replica" | "payments" | "NATS node" | "PostgreSQL primary";
const kinds: Kind[] = ["api replica", "payments", "NATS node", "PostgreSQL primary"];

const pick = <T>(list: T[]) => list[Math.floor(Math.random() * list.length)];
const shuffled = <T>(list: T[]) =>
  list
    .map((value) => ({ value, sort: Math.random() }))
    .sort((a, b) => a.sort - b.sort)
    .map(({ value }) => value);

/**
 * X5: one fault at a time, at random moments (`gapMs` apart, ± half), each of the four kinds in
 * every round of four: SIGKILL an api replica, payments, a NATS node, or PostgreSQL's primary
 * (Patroni's leader), then bring it back after a few seconds.
 */
export async function injectFaults(
  system: ChaosSystem,
  stats: Stats,
  until: () => boolean,
  gapMs: number,
): Promise<void> {
  let round: Kind[] = [];
  await Bun.sleep(gapMs * (0.5 + Math.random()));
  while (!until()) {
    if (!round.length) round = shuffled(kinds);
    const kind = round.shift() as Kind;
    try {
      await inject(system, stats, kind);
    } catch (error) {
      stats.fault("could not restore", kind, String(error).slice(0, 200));
    }
    await Bun.sleep(gapMs * (0.5 + Math.random()));
  }
}

async function inject(system: ChaosSystem, stats: Stats, kind: Kind): Promise<void> {
  const down = () => Bun.sleep(2_000 + Math.random() * 4_000);
  if (kind === "api replica" || kind === "payments") {
    const service = kind === "payments" ? system.payments : pick(system.apis);
    const fault = stats.fault("SIGKILL", service.name);
    await service.stop("SIGKILL");
    await down();
    await service.start();
    fault.backAt = Date.now();
    return;
  }
  if (kind === "NATS node") {
    const i = Math.floor(Math.random() * system.nats.length);
    const fault = stats.fault("SIGKILL", `nats n${i + 1}`);
    await system.nats[i].stop("SIGKILL");
    await down();
    await system.nats[i].start();
    fault.backAt = Date.now();
    return;
  }
  const leader = await system.cluster.waitForLeader();
  const fault = stats.fault("SIGKILL", `postgres primary ${leader}`);
  await system.cluster.killLeader(leader);
  const promoted = await system.cluster.waitForLeader(leader);
  fault.note = `${promoted} promoted after ${((Date.now() - fault.at) / 1000).toFixed(1)} s`;
  console.log(`[chaos] ${stats.clock(Date.now())} ${fault.note}`);
  // The killed node comes back as a replica of the new leader.
  await system.cluster.rejoin(leader);
  fault.backAt = Date.now();
}

/** The startup row: exec → /ready of each service, `startupRuns` starts, and RSS once ready. */
import { launch, prefix, serviceCommand, settings } from "../context";
import { paymentsEnv, serviceEnv, stop } from "../harness";
import { median } from "../load";
import { memory } from "../machine";

export type Startup = Awaited<ReturnType<typeof binaryStartup>>;

export async function binaryStartup(name: "api" | "payments") {
  const readyMs: number[] = [];
  const rssMib: number[] = [];
  const env = name === "api" ? serviceEnv(prefix.startup) : paymentsEnv(prefix.startup);
  for (let i = 0; i < settings.startupRuns; i++) {
    const service = await launch(`${name}-startup`, serviceCommand(name), env, { log: false });
    readyMs.push(service.readyMs);
    await Bun.sleep(200);
    rssMib.push(memory(service.pid).rss_mib);
    await stop(service);
  }
  return {
    ready_ms_median: Math.round(median(readyMs)),
    ready_ms_each: readyMs.map(Math.round),
    rss_at_ready_mib: median(rssMib),
  };
}

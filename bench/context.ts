/**
 * One `npm run bench` run: its settings (from BENCH_* variables), its id and NATS prefixes, its
 * directory, its database and NATS connections, and the helpers every row of it calls.
 */
import type { NatsConnection } from "nats";
import postgres from "postgres";
import { loadCatalog, payInFull } from "./data";
import {
  serviceCommand as commandOf,
  databaseUrl,
  launch as launchIn,
  makeRunDir,
  readConnections,
  type Service,
  serviceEnv,
} from "./harness";
import { wrk as wrkFor } from "./load";
import type { PlacedOrder } from "./order-paid-latency";

export const settings = {
  seconds: Number(process.env.BENCH_SECONDS ?? 8),
  rounds: Number(process.env.BENCH_ROUNDS ?? 3),
  latencyCount: Number(process.env.BENCH_LATENCY_COUNT ?? 1000),
  burstCount: Number(process.env.BENCH_BURST_COUNT ?? 1000),
  burstRounds: 3,
  burstInFlight: 32,
  useSources: process.env.BENCH_SOURCES === "1",
  keepLogs: process.env.BENCH_KEEP === "1",
  webhookConnections: 32,
  startupRuns: 5,
};
export const only = process.env.BENCH_ONLY;
export const mode = settings.useSources ? "sources" : "binaries";

export const runId = crypto.randomUUID().replaceAll("-", "").slice(0, 8);
/** NATS prefixes of this run: the main stack, the webhook-only payments, startups, the soak. */
export const prefix = {
  main: `bench${runId}`,
  webhook: `bench${runId}w`,
  startup: `bench${runId}s`,
  soak: `bench${runId}k`,
};
export const runDir = makeRunDir(`bench-${runId}`);

export const sql = postgres(databaseUrl, { max: 4, onnotice: () => {} });
const link: { nc?: NatsConnection } = {};
export const setNats = (nc: NatsConnection) => {
  link.nc = nc;
};
export const nats = (): NatsConnection | undefined => link.nc;
export function connectedNats(): NatsConnection {
  if (!link.nc) throw new Error("nats is not connected");
  return link.nc;
}

export const serviceCommand = (name: "api" | "payments") => commandOf(name, settings.useSources);
export const launch = (
  name: string,
  commandLine: string[],
  env: Record<string, string>,
  options: { log?: boolean } = {},
) => launchIn(runDir, name, commandLine, env, options);
export const wrk = (
  target: Service,
  script: string,
  args: string[],
  { connections = readConnections, duration = settings.seconds } = {},
) => wrkFor(target, script, args, { connections, duration });

/** Pays `order` in full with a notification id of this run. */
export const pay = (payments: Service, order: PlacedOrder, run: string) =>
  payInFull(payments, order, `bench${runId}${run}-${order.order_id}`);

/** What a row hands back: files for the run's directory (objects as JSON) and what to print. */
export type Outcome = { files: Record<string, unknown>; print: string };

/** The api of the run's main stack, and the bench catalog it serves. */
export async function startApi(): Promise<{ api: Service; productIds: number[] }> {
  const api = await launch("api", serviceCommand("api"), serviceEnv(prefix.main));
  return { api, productIds: await loadCatalog(sql) };
}

/**
 * What every bench row shares: where the servers are, the log line, the run's directory, wrk
 * installed, and the services launched by the tests' launcher with their output streamed to files.
 */
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { jwtSecret, webhookSecret } from "@commerce/testing/basics";
import {
  serviceCommand as commandOf,
  launch as launchProcess,
  root as repositoryRoot,
  type ServiceName,
  type ServiceProcess,
} from "@commerce/testing/launch";
import postgres from "postgres";

export const root = repositoryRoot;
/**
 * The bench's own database, `bench`, unless DATABASE_URL names another: never the tests' `test`,
 * where endpoints test files left enabled once made every order move write thousands of
 * deliveries (the write rows measured 4x too slow), and where the bench's rows would disturb the
 * tests running beside it.
 */
export const benchDatabase = "bench";
export const databaseUrl =
  process.env.DATABASE_URL ?? `postgres://root@127.0.0.1:5432/${benchDatabase}`;
export const natsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
export const threads = 2;
export const readConnections = 64;
export const customers = 1000;
export { jwtSecret, webhookSecret };

export const say = (line: string) =>
  console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);

/**
 * The URL of database `name` on the bench's PostgreSQL server, created first if it is missing
 * (through an admin connection to the server's `postgres` database); the services migrate it
 * when they start.
 */
export async function databaseOnServer(name: string): Promise<string> {
  const url = new URL(databaseUrl);
  url.pathname = "/postgres";
  const admin = postgres(url.toString(), { max: 1, onnotice: () => {} });
  try {
    const [exists] = await admin`select 1 from pg_database where datname = ${name}`;
    if (!exists) {
      say(`creating database ${name}`);
      await admin.unsafe(`create database ${name}`);
    }
  } finally {
    await admin.end({ timeout: 5 });
  }
  url.pathname = `/${name}`;
  return url.toString();
}

/** The `bench` database, created if it is missing, unless DATABASE_URL names another. */
export async function ensureDatabase(): Promise<void> {
  if (!process.env.DATABASE_URL) await databaseOnServer(benchDatabase);
}

/** A fresh directory for one run's logs, data files and results. */
export function makeRunDir(label: string): string {
  const dir = `${tmpdir()}/commerce-${label}`;
  mkdirSync(dir, { recursive: true });
  return dir;
}

export function ensureWrk(): void {
  if (Bun.which("wrk")) return;
  if (process.getuid?.() !== 0) {
    console.error(
      "wrk is not installed: run `sudo apt-get install -y wrk`, then npm run bench again.",
    );
    process.exit(1);
  }
  say("installing wrk (apt-get install -y wrk)");
  let install = Bun.spawnSync(["apt-get", "install", "-y", "wrk"], { stdout: "ignore" });
  if (install.exitCode !== 0) {
    Bun.spawnSync(["apt-get", "update"], { stdout: "ignore" });
    install = Bun.spawnSync(["apt-get", "install", "-y", "wrk"], { stdout: "ignore" });
  }
  if (install.exitCode !== 0 || !Bun.which("wrk")) {
    console.error("could not install wrk; install it with `apt-get install -y wrk`.");
    process.exit(1);
  }
}

export type Service = ServiceProcess;

/** What this run started and has not stopped yet, for the clean-up after a failure. */
export const running: Service[] = [];

/**
 * `command` as a process named `name`, ready; its stdout in `<runDir>/<name>.log` (discarded with
 * `log: false`, e.g. for the startup timings), its stderr in `<name>.err`.
 */
export async function launch(
  runDir: string,
  name: string,
  command: string[],
  env: Record<string, string>,
  { log = true } = {},
): Promise<Service> {
  const service = await launchProcess({
    name,
    command,
    env,
    output: { dir: runDir, stdout: log },
    readyTimeoutMs: 30_000,
    // The startup row times exec → /ready: a coarse poll would add to it.
    readyPollMs: 5,
  });
  running.push(service);
  return service;
}

export async function stop(service: Service): Promise<void> {
  const index = running.indexOf(service);
  if (index >= 0) running.splice(index, 1);
  await service.stop("SIGTERM", 12_000);
}

export const serviceCommand = (name: ServiceName, fromSources = false) =>
  commandOf(name, !fromSources);

export const serviceEnv = (natsPrefix: string) => ({
  DATABASE_URL: databaseUrl,
  NATS_URL: natsUrl,
  NATS_PREFIX: natsPrefix,
  AUTH_JWT_SECRET: jwtSecret,
  PAYMENT_WEBHOOK_SECRETS: webhookSecret,
  // The load places thousands of unpaid orders for a few customers: N5's limits would refuse them.
  HOLD_MAX_ORDERS: "0",
  HOLD_MAX_UNITS: "0",
  LOG_LEVEL: "info",
});
// All load comes from 127.0.0.1, one "source IP", so the payments per-IP budget would answer 429.
export const paymentsEnv = (natsPrefix: string) => ({
  ...serviceEnv(natsPrefix),
  RATE_LIMIT_RPS: "0",
});

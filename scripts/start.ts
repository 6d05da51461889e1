/**
 * `npm start`: both services from source for local use (CONTRACT section 1).
 *
 * Database, first that applies:
 *   1. DATABASE_URL when set, as given; if it does not answer, start stops (an explicit URL is
 *      never swapped for another database).
 *   2. PostgreSQL at START_PG_ADDRESS (127.0.0.1:5432) when it answers and lets us in as $PGUSER
 *      (else the login name; $PGPASSWORD if it needs one). The database is `commerce`, created
 *      when missing; if it is missing and we may not create it, the `postgres` database is used.
 *   3. Embedded PGlite, one per service in .data/pglite-api and .data/pglite-payments, each served
 *      to that service's pool of one connection (start/embedded-postgres.ts says why).
 * NATS: NATS_URL when set (stops if it does not answer with JetStream); else NATS at
 * START_NATS_ADDRESS (127.0.0.1:4222) when it answers with JetStream; else a private
 * `nats-server -js -sd .data/nats` on a free port.
 * START_PG_ADDRESS=none / START_NATS_ADDRESS=none skip the probe, so the embedded database and
 * the private nats-server are used (also how to try those modes on a machine that has both).
 * START_API_PORT (3000) and START_PAYMENTS_PORT (3001) choose the services' ports; both listen on
 * 127.0.0.1 only (HOST, N12), since the printed tokens and webhook secret are for local use.
 *
 * AUTH_JWT_SECRET and PAYMENT_WEBHOOK_SECRETS come from the environment, or from
 * .data/auth-jwt-secret and .data/payment-webhook-secret (made on first use, mode 0600), the
 * files `npm run token` and `npm run webhook` read. Ctrl-C (or SIGTERM) stops the services first,
 * then nats-server and PGlite, and exits 0.
 */

import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { natsConnection, natsEnv } from "@commerce/shared/platform/config";
import { parseEnv } from "@commerce/shared/platform/env";
import { bunServiceFlags } from "@commerce/shared/platform/http/request-limits";
import { bannerLines, forgetRunning, type Running, rememberRunning } from "./start/banner";
import { Child, label } from "./start/child";
import { startEmbeddedPostgres } from "./start/embedded-postgres";
import {
  type Address,
  answers,
  errorText,
  freePort,
  jetStreamProblem,
  tryPostgres,
} from "./start/probes";
import { providerVariables } from "./start/providers";

const root = new URL("..", import.meta.url).pathname;
const dataDir = `${root}.data`;
const env = process.env;
const serviceNames = ["api", "payments"] as const;
type Service = (typeof serviceNames)[number];

class StartError extends Error {}

const say = (message: string) => process.stdout.write(`${label("start")}${message}\n`);

/** "host:port", or undefined for "none" (skip that probe). */
function address(name: string, fallback: string): Address | undefined {
  const raw = env[name]?.trim() || fallback;
  if (raw === "none") return undefined;
  const match = /^(.+):(\d{1,5})$/.exec(raw);
  if (!match) throw new StartError(`${name} must look like 127.0.0.1:5432 or be "none"`);
  return { host: match[1], port: Number(match[2]) };
}

function port(name: string, fallback: number): number {
  const raw = env[name]?.trim() || String(fallback);
  if (!/^\d{1,5}$/.test(raw) || Number(raw) < 1 || Number(raw) > 65535)
    throw new StartError(`${name} must be a port number, got "${raw}"`);
  return Number(raw);
}

/** The secret from the environment, else the one kept in .data (made on first use, 0600). */
function secret(envName: string, file: string, prefix: string, bytes: number): string {
  const fromEnv = env[envName]?.trim();
  if (fromEnv) return fromEnv;
  const path = `${dataDir}/${file}`;
  if (!existsSync(path)) {
    writeFileSync(path, `${prefix}${randomBytes(bytes).toString("hex")}\n`, {
      mode: 0o600,
      flag: "wx",
    });
    say(`made .data/${file} (kept for the next start)`);
  }
  chmodSync(path, 0o600);
  return readFileSync(path, "utf8").trim();
}

/** Starts a child; its exit before `npm start` stops it stops everything. */
function supervise(name: string, command: string[], childEnv: NodeJS.ProcessEnv = env): Child {
  const child = new Child(name, command, { cwd: root, env: childEnv });
  children.push(child);
  void child.exited.then(() => {
    if (stopping) return;
    process.stderr.write(`${label("start")}${name} exited (${child.exitStatus})\n`);
    void stopAll(1);
  });
  return child;
}

const children: Child[] = [];
let services: Child[] = [];
let natsServer: Child | undefined;
const embedded: Array<() => Promise<void>> = [];
let stopping: { exitCode: number; done: Promise<void> } | undefined;
/** What `npm run where` reads, once this start got that far (O10). */
let running: Running | undefined;

/** Services first (they drain NATS and close the database), then nats-server, then PGlite. */
async function stopAll(exitCode: number): Promise<never> {
  stopping ??= {
    exitCode,
    done: (async () => {
      const started = children.length > 0 || embedded.length > 0;
      if (started) say("stopping");
      await Promise.all(services.map((child) => child.stop(12_000)));
      await natsServer?.stop(10_000);
      await Promise.all(embedded.map((close) => close()));
      forgetRunning(dataDir, running);
      if (started) say("stopped");
    })(),
  };
  await stopping.done;
  process.exit(stopping.exitCode);
}

// npm forwards the terminal's Ctrl-C as well, so a second signal is expected: stopAll is once.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => void stopAll(0));
process.on("exit", () => {
  for (const child of children) child.kill();
});

async function main(): Promise<void> {
  const ports = { api: port("START_API_PORT", 3000), payments: port("START_PAYMENTS_PORT", 3001) };
  for (const service of serviceNames)
    if (await answers({ host: "127.0.0.1", port: ports[service] }))
      throw new StartError(
        `port ${ports[service]} is in use (another npm start?): stop that or set START_${service.toUpperCase()}_PORT`,
      );

  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const jwtSecret = secret("AUTH_JWT_SECRET", "auth-jwt-secret", "", 32);
  const secrets: Record<Service, Record<string, string>> = {
    api: { AUTH_JWT_SECRET: jwtSecret },
    payments: {
      // The operator routes take the api's admin tokens.
      AUTH_JWT_SECRET: jwtSecret,
      PAYMENT_WEBHOOK_SECRETS: secret(
        "PAYMENT_WEBHOOK_SECRETS",
        "payment-webhook-secret",
        "whsec_",
        24,
      ),
    },
  };

  const database = await chooseDatabase();
  say(`database: ${database.description}`);
  const nats = await chooseNats();
  say(`nats: ${nats.description}`);

  const urls = {
    api: `http://127.0.0.1:${ports.api}`,
    payments: `http://127.0.0.1:${ports.payments}`,
  };
  // U1: the console on the api's origin reads payments' operator routes from the browser.
  const consoleLink: Record<Service, Record<string, string>> = {
    api: { PAYMENTS_PUBLIC_URL: urls.payments },
    payments: { CONSOLE_ORIGINS: urls.api },
  };
  services = serviceNames.map((service) => {
    const childEnv: NodeJS.ProcessEnv = {
      ...consoleLink[service],
      ...env,
      PORT: String(ports[service]),
      // N12: local use only, as the URLs printed below say; a container listens on 0.0.0.0.
      HOST: "127.0.0.1",
      NATS_URL: nats.url,
    };
    // Each service gets only the secrets it uses.
    delete childEnv.AUTH_JWT_SECRET;
    delete childEnv.PAYMENT_WEBHOOK_SECRETS;
    if (service === "api") for (const name of providerVariables) delete childEnv[name];
    Object.assign(childEnv, { DATABASE_URL: database.urls[service] }, secrets[service]);
    // Locally, outgoing webhooks may go to a receiver on this machine (`npm run receive`).
    if (service === "api") {
      childEnv.WEBHOOK_ALLOW_HTTP ??= "1";
      childEnv.WEBHOOK_ALLOW_PRIVATE ??= "1";
    }
    return supervise(
      service,
      // O10: configured by the environment given here only, never by a `.env` in the checkout
      // (one written by `npm run secrets` is for compose).
      [process.execPath, "--no-env-file", ...bunServiceFlags, `services/${service}/src/main.ts`],
      childEnv,
    );
  });
  await Promise.all(services.map((child, i) => waitReady(child, urls[serviceNames[i]])));

  running = {
    pid: process.pid,
    urls,
    paymentsPort: ports.payments,
    database: database.description,
    nats: nats.description,
    providers: providerVariables.filter((name) => env[name]?.trim()),
  };
  rememberRunning(dataDir, running);
  const lines = await bannerLines(running, jwtSecret, say);
  lines.push("Ctrl-C stops everything.", "");
  for (const line of lines) say(line);
}

type Database = { urls: Record<Service, string>; description: string };

const everyService = (url: string, description: string): Database => ({
  urls: { api: url, payments: url },
  description,
});

async function chooseDatabase(): Promise<Database> {
  if (env.DATABASE_URL?.trim()) {
    const url = env.DATABASE_URL.trim();
    const parsed = URL.canParse(url) ? new URL(url) : undefined;
    const where = parsed
      ? `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`
      : "not a URL";
    const problem = await tryPostgres(url, "select 1");
    if (problem)
      throw new StartError(
        `DATABASE_URL (${where}) does not answer: ${problem.text}; fix or unset it`,
      );
    return everyService(url, `DATABASE_URL (${where})`);
  }
  const local = address("START_PG_ADDRESS", "127.0.0.1:5432");
  if (local && (await answers(local))) {
    const chosen = await localPostgres(local);
    if ("urls" in chosen) return chosen;
    say(`PostgreSQL at ${local.host}:${local.port} answers but ${chosen.refused}; using PGlite`);
  }
  return startPglite();
}

/** Who we are, as libpq would say: Bun's userInfo() answers "unknown" where $USER is unset. */
function loginName(): string {
  const fromEnv = env.USER || env.LOGNAME;
  if (fromEnv) return fromEnv;
  const id = Bun.spawnSync(["id", "-un"], { stdout: "pipe", stderr: "ignore" });
  return id.exitCode === 0 ? id.stdout.toString().trim() : userInfo().username;
}

/** The `commerce` database on a local server, created if missing; `postgres` if we may not. */
async function localPostgres({ host, port }: Address): Promise<Database | { refused: string }> {
  const user = env.PGUSER || loginName();
  const on = (db: string) =>
    everyService(
      `postgres://${encodeURIComponent(user)}@${host}:${port}/${db}`,
      `PostgreSQL ${host}:${port}/${db} as ${user}`,
    );
  const missing = await tryPostgres(on("commerce").urls.api, "select 1");
  if (!missing) return on("commerce");
  if (missing.code !== "3D000") return { refused: missing.text };
  const refused = await tryPostgres(on("postgres").urls.api, "create database commerce");
  if (!refused) say(`created database commerce on ${host}:${port}`);
  if (!refused || refused.code === "42P04") return on("commerce");
  if (refused.code !== "42501") return { refused: refused.text };
  say(`may not create database commerce (${refused.text}); using database postgres`);
  return on("postgres");
}

async function startPglite(): Promise<Database> {
  say("starting embedded PGlite in .data/pglite-api and -payments (the first start takes a while)");
  if (existsSync(`${dataDir}/pglite`))
    say(".data/pglite (one PGlite for both services, from an earlier npm start) is no longer used");
  const urls = {} as Record<Service, string>;
  await Promise.all(
    serviceNames.map(async (service) => {
      const database = await startEmbeddedPostgres(`${dataDir}/pglite-${service}`);
      embedded.push(database.stop);
      urls[service] = database.url;
    }),
  );
  const where = serviceNames.map((service) => `${service} ${new URL(urls[service]).host}`);
  return { urls, description: `embedded PGlite in .data/pglite-*, ${where.join(", ")}` };
}

type Nats = { url: string; description: string };

async function chooseNats(): Promise<Nats> {
  if (env.NATS_URL?.trim()) {
    const url = env.NATS_URL.trim();
    // The services take the same credentials (N1); only the URL without them is printed.
    const { natsUrl, natsCredentials } = natsConnection(parseEnv(natsEnv, env));
    const problem = await jetStreamProblem(natsUrl, natsCredentials);
    if (problem) throw new StartError(`NATS_URL (${natsUrl}) ${problem}; fix or unset it`);
    return { url, description: `NATS_URL (${natsUrl})` };
  }
  const local = address("START_NATS_ADDRESS", "127.0.0.1:4222");
  if (local && (await answers(local))) {
    const url = `nats://${local.host}:${local.port}`;
    const problem = await jetStreamProblem(url);
    if (!problem) return { url, description: `NATS ${url}` };
    say(`NATS at ${url} ${problem}; starting a private nats-server`);
  }
  return startNatsServer();
}

async function startNatsServer(): Promise<Nats> {
  // Debian installs it in /usr/sbin, which a normal user's PATH may lack.
  const binary = Bun.which("nats-server", { PATH: `${env.PATH ?? ""}:/usr/sbin:/usr/local/sbin` });
  if (!binary)
    throw new StartError(
      "nats-server not found: install it (apt-get install nats-server, brew install nats-server) or set NATS_URL to a NATS with JetStream",
    );
  const natsPort = await freePort();
  const args = ["-js", "-sd", `${dataDir}/nats`, "-a", "127.0.0.1", "-p", String(natsPort)];
  natsServer = supervise("nats", [binary, ...args]);
  const deadline = Date.now() + 15_000;
  while (!(await answers({ host: "127.0.0.1", port: natsPort }))) {
    if (!natsServer.running || Date.now() > deadline)
      throw new StartError(`nats-server did not start (${natsServer.exitStatus ?? "timed out"})`);
    await Bun.sleep(100);
  }
  const url = `nats://127.0.0.1:${natsPort}`;
  return { url, description: `private nats-server ${url}, JetStream in .data/nats` };
}

async function waitReady(child: Child, url: string): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (!child.running)
      throw new StartError(`${child.name} exited (${child.exitStatus}) before it was ready`);
    try {
      const response = await fetch(`${url}/ready`, { signal: AbortSignal.timeout(2000) });
      if (response.ok) return;
    } catch {}
    await Bun.sleep(250);
  }
  throw new StartError(`${child.name} was not ready after 90 s (GET ${url}/ready)`);
}

try {
  await main();
} catch (error) {
  process.stderr.write(
    `${label("start")}${error instanceof StartError ? error.message : errorText(error)}\n`,
  );
  await stopAll(1);
}

/**
 * `npm start`: both services from source for local use (CONTRACT section 1).
 *
 * Database, first that applies:
 *   1. DATABASE_URL when set, as given; if it does not answer, start stops (an explicit URL is
 *      never swapped for another database).
 *   2. PostgreSQL at START_PG_ADDRESS (127.0.0.1:5432) when it answers and lets us in as $PGUSER
 *      (else the login name; $PGPASSWORD if it needs one). The database is `commerce`, created
 *      when missing; if it is missing and we may not create it, the `postgres` database is used.
 *   3. Embedded PGlite in .data/pglite, served over the Postgres wire protocol on a free port.
 * NATS: NATS_URL when set (stops if it does not answer with JetStream); else NATS at
 * START_NATS_ADDRESS (127.0.0.1:4222) when it answers with JetStream; else a private
 * `nats-server -js -sd .data/nats` on a free port.
 * START_PG_ADDRESS=none / START_NATS_ADDRESS=none skip the probe, so the embedded database and
 * the private nats-server are used (also how to try those modes on a machine that has both).
 * START_API_PORT (3000) and START_PAYMENTS_PORT (3001) choose the services' ports.
 *
 * AUTH_JWT_SECRET and PAYMENT_WEBHOOK_SECRETS come from the environment, or from
 * .data/auth-jwt-secret and .data/payment-webhook-secret (made on first use, mode 0600), the
 * files `npm run token` and `npm run webhook` read. Ctrl-C (or SIGTERM) stops the services first,
 * then nats-server and PGlite, and exits 0.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { userInfo } from "node:os";
import { createInterface } from "node:readline";
import { type NatsCredentials, natsConnection } from "@commerce/shared/config";
import { SignJWT } from "jose";
import { connect as connectNats } from "nats";
import postgres from "postgres";

const root = new URL("..", import.meta.url).pathname;
const dataDir = `${root}.data`;
const env = process.env;

class StartError extends Error {}

const say = (message: string) => process.stdout.write(`${label("start")}${message}\n`);

function label(name: string): string {
  return `${name.padEnd(8)} | `;
}

type Address = { host: string; port: number };

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

/** Whether something accepts TCP connections there. */
function answers({ host, port }: Address, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && !error.message.includes(code)
    ? `${error.message} (${code})`
    : error.message;
}

/** The secret from the environment, else the one kept in .data (made on first use, 0600). */
function secret(envName: string, file: string, make: () => string): string {
  const fromEnv = env[envName]?.trim();
  if (fromEnv) return fromEnv;
  const path = `${dataDir}/${file}`;
  if (!existsSync(path)) {
    writeFileSync(path, `${make()}\n`, { mode: 0o600, flag: "wx" });
    say(`made .data/${file} (kept for the next start)`);
  }
  chmodSync(path, 0o600);
  return readFileSync(path, "utf8").trim();
}

/** A child process whose output is forwarded line by line behind its name. */
class Child {
  private readonly process: ChildProcess;
  readonly exited: Promise<void>;
  exitStatus?: string;

  constructor(
    readonly name: string,
    command: string[],
    childEnv: NodeJS.ProcessEnv = env,
  ) {
    // Its own process group: the terminal's Ctrl-C reaches only us, so we choose the order.
    this.process = spawn(command[0], command.slice(1), {
      cwd: root,
      env: childEnv,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    for (const stream of [this.process.stdout, this.process.stderr])
      if (stream)
        createInterface({ input: stream }).on("line", (line) =>
          process.stdout.write(`${label(name)}${line}\n`),
        );
    this.exited = new Promise((resolve) => {
      this.process.once("exit", (code, signal) => {
        this.exitStatus = signal ? `signal ${signal}` : `code ${code}`;
        resolve();
      });
      this.process.once("error", (error) => {
        this.exitStatus = errorText(error);
        resolve();
      });
    });
    children.push(this);
    void this.exited.then(() => {
      if (stopping) return;
      process.stderr.write(`${label("start")}${name} exited (${this.exitStatus})\n`);
      void stopAll(1);
    });
  }

  get running(): boolean {
    return this.exitStatus === undefined;
  }

  /** SIGTERM, then SIGKILL if it is still there after `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    if (!this.running) return;
    this.process.kill("SIGTERM");
    const timer = setTimeout(() => this.kill(), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  kill(): void {
    if (this.running) this.process.kill("SIGKILL");
  }
}

const children: Child[] = [];
let services: Child[] = [];
let natsServer: Child | undefined;
let embedded: { close(): Promise<void> } | undefined;
let stopping: { exitCode: number; done: Promise<void> } | undefined;

/** Services first (they drain NATS and close the database), then nats-server, then PGlite. */
async function stopAll(exitCode: number): Promise<never> {
  stopping ??= {
    exitCode,
    done: (async () => {
      const started = children.length > 0 || embedded !== undefined;
      if (started) say("stopping");
      await Promise.all(services.map((child) => child.stop(12_000)));
      await natsServer?.stop(10_000);
      await embedded?.close();
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
  const apiPort = port("START_API_PORT", 3000);
  const paymentsPort = port("START_PAYMENTS_PORT", 3001);
  for (const [name, servicePort] of [
    ["START_API_PORT", apiPort],
    ["START_PAYMENTS_PORT", paymentsPort],
  ] as const)
    if (await answers({ host: "127.0.0.1", port: servicePort }))
      throw new StartError(
        `port ${servicePort} is in use (another npm start?): stop that or set ${name}`,
      );

  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const jwtSecret = secret("AUTH_JWT_SECRET", "auth-jwt-secret", () =>
    randomBytes(32).toString("hex"),
  );
  const webhookSecrets = secret(
    "PAYMENT_WEBHOOK_SECRETS",
    "payment-webhook-secret",
    () => `whsec_${randomBytes(24).toString("hex")}`,
  );

  const database = await chooseDatabase();
  say(`database: ${database.description}`);
  const nats = await chooseNats();
  say(`nats: ${nats.description}`);

  const serviceEnv = (servicePort: number, own: Record<string, string>) => {
    const childEnv: NodeJS.ProcessEnv = {
      ...env,
      PORT: String(servicePort),
      DATABASE_URL: database.url,
      NATS_URL: nats.url,
      ...own,
    };
    // Each service gets only its own secret.
    if (!own.AUTH_JWT_SECRET) delete childEnv.AUTH_JWT_SECRET;
    if (!own.PAYMENT_WEBHOOK_SECRETS) delete childEnv.PAYMENT_WEBHOOK_SECRETS;
    return childEnv;
  };
  const api = new Child(
    "api",
    [process.execPath, "services/api/src/main.ts"],
    serviceEnv(apiPort, { AUTH_JWT_SECRET: jwtSecret }),
  );
  const payments = new Child(
    "payments",
    [process.execPath, "services/payments/src/main.ts"],
    serviceEnv(paymentsPort, { PAYMENT_WEBHOOK_SECRETS: webhookSecrets }),
  );
  services = [api, payments];
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const paymentsUrl = `http://127.0.0.1:${paymentsPort}`;
  await Promise.all([waitReady(api, apiUrl), waitReady(payments, paymentsUrl)]);

  const lines = [
    "",
    `api       ${apiUrl}   Swagger UI ${apiUrl}/swagger`,
    `payments  ${paymentsUrl}   Swagger UI ${paymentsUrl}/swagger`,
    `database  ${database.description}`,
    `nats      ${nats.description}`,
    "",
  ];
  try {
    lines.push(...(await demo(apiUrl, paymentsPort, jwtSecret)));
  } catch (error) {
    lines.push(`(no demo data or tokens: ${errorText(error)})`, "");
  }
  lines.push("Ctrl-C stops everything.", "");
  for (const line of lines) say(line);
}

type Choice = { url: string; description: string };

async function chooseDatabase(): Promise<Choice> {
  if (env.DATABASE_URL?.trim()) {
    const url = env.DATABASE_URL.trim();
    const where = describeUrl(url);
    const problem = await postgresProblem(url);
    if (problem)
      throw new StartError(`DATABASE_URL (${where}) does not answer: ${problem}; fix or unset it`);
    return { url, description: `DATABASE_URL (${where})` };
  }
  const local = address("START_PG_ADDRESS", "127.0.0.1:5432");
  if (local && (await answers(local))) {
    const chosen = await localPostgres(local);
    if ("url" in chosen) return chosen;
    say(`PostgreSQL at ${local.host}:${local.port} answers but ${chosen.refused}; using PGlite`);
  }
  return startPglite();
}

function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
  } catch {
    return "not a URL";
  }
}

/** Undefined when `select 1` works there, else why not. */
async function postgresProblem(url: string): Promise<string | undefined> {
  const sql = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await sql`select 1`;
    return undefined;
  } catch (error) {
    return errorText(error);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** Who we are, as libpq would say: Bun's userInfo() answers "unknown" where $USER is unset. */
function loginName(): string {
  const fromEnv = env.USER || env.LOGNAME;
  if (fromEnv) return fromEnv;
  const id = Bun.spawnSync(["id", "-un"], { stdout: "pipe", stderr: "ignore" });
  return id.exitCode === 0 ? id.stdout.toString().trim() : userInfo().username;
}

/** The `commerce` database on a local server, created if missing; `postgres` if we may not. */
async function localPostgres({ host, port }: Address): Promise<Choice | { refused: string }> {
  const user = env.PGUSER || loginName();
  const urlOf = (db: string) => `postgres://${encodeURIComponent(user)}@${host}:${port}/${db}`;
  const described = (db: string) => ({
    url: urlOf(db),
    description: `PostgreSQL ${host}:${port}/${db} as ${user}`,
  });
  const sql = postgres(urlOf("commerce"), { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await sql`select 1`;
    return described("commerce");
  } catch (error) {
    if ((error as { code?: string }).code !== "3D000") return { refused: errorText(error) };
  } finally {
    await sql.end({ timeout: 1 });
  }
  const admin = postgres(urlOf("postgres"), { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await admin`create database commerce`;
    say(`created database commerce on ${host}:${port}`);
    return described("commerce");
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "42P04") return described("commerce");
    if (code === "42501") {
      say(`may not create database commerce (${errorText(error)}); using database postgres`);
      return described("postgres");
    }
    return { refused: errorText(error) };
  } finally {
    await admin.end({ timeout: 1 });
  }
}

async function chooseNats(): Promise<Choice> {
  if (env.NATS_URL?.trim()) {
    const url = env.NATS_URL.trim();
    // The services take the same credentials (N1); only the URL without them is printed.
    const { natsUrl, natsCredentials } = natsConnection(env);
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

/** Undefined when NATS answers there with JetStream enabled, else what is wrong. */
async function jetStreamProblem(
  url: string,
  credentials?: NatsCredentials,
): Promise<string | undefined> {
  let nc: Awaited<ReturnType<typeof connectNats>>;
  try {
    nc = await connectNats({ servers: url, timeout: 3000, reconnect: false, ...credentials });
  } catch (error) {
    return `does not answer (${errorText(error)})`;
  }
  try {
    await nc.jetstreamManager();
    return undefined;
  } catch {
    return "answers without JetStream (run nats-server with -js)";
  } finally {
    await nc.close();
  }
}

async function startNatsServer(): Promise<Choice> {
  // Debian installs it in /usr/sbin, which a normal user's PATH may lack.
  const binary = Bun.which("nats-server", { PATH: `${env.PATH ?? ""}:/usr/sbin:/usr/local/sbin` });
  if (!binary)
    throw new StartError(
      "nats-server not found: install it (apt-get install nats-server, brew install nats-server) or set NATS_URL to a NATS with JetStream",
    );
  const natsPort = await freePort();
  natsServer = new Child("nats", [
    binary,
    "-js",
    "-sd",
    `${dataDir}/nats`,
    "-a",
    "127.0.0.1",
    "-p",
    String(natsPort),
  ]);
  const deadline = Date.now() + 15_000;
  while (!(await answers({ host: "127.0.0.1", port: natsPort }))) {
    if (!natsServer.running || Date.now() > deadline)
      throw new StartError(`nats-server did not start (${natsServer.exitStatus ?? "timed out"})`);
    await Bun.sleep(100);
  }
  const url = `nats://127.0.0.1:${natsPort}`;
  return { url, description: `private nats-server ${url}, JetStream in .data/nats` };
}

/** The part of PGlite's API the gateway uses. */
type Pglite = {
  runExclusive<T>(work: () => Promise<T>): Promise<T>;
  execProtocolRawStream(
    message: Uint8Array,
    options: { onRawData: (data: Uint8Array) => void },
  ): Promise<void>;
  isInTransaction(): boolean;
  exec(query: string): Promise<unknown>;
  close(): Promise<void>;
};

async function startPglite(): Promise<Choice> {
  // Loaded by name: only this mode needs the package, and its absence deserves one clear line.
  const packageName = "@electric-sql/pglite";
  let PGlite: { create(dataDir: string): Promise<Pglite> };
  try {
    ({ PGlite } = await import(packageName));
  } catch {
    throw new StartError(
      `no PostgreSQL answers and ${packageName} is not installed: run npm install, or set DATABASE_URL`,
    );
  }
  say("starting embedded PGlite in .data/pglite (the first start takes a few seconds)");
  const db = await PGlite.create(`${dataDir}/pglite`);
  const gateway = new PgliteGateway(db);
  const gatewayPort = await gateway.listen();
  embedded = {
    close: async () => {
      await gateway.close();
      await db.close();
    },
  };
  return {
    url: `postgres://postgres@127.0.0.1:${gatewayPort}/postgres`,
    description: `embedded PGlite (.data/pglite) at 127.0.0.1:${gatewayPort}`,
  };
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
const SYNC_MESSAGE = new Uint8Array([0x53, 0, 0, 0, 4]);

/**
 * Serves one PGlite (a single Postgres session) to many client connections. A connection owns
 * the session from its first message until a Sync or simple Query leaves it outside any
 * transaction, so extended-protocol steps and transactions are never interleaved (what
 * pglite-socket's per-message queue does, which loses portals under a pool). What stays shared:
 * session settings, advisory locks (one session holds them all) and prepared statements, which
 * postgres.js names per connection at random, so they do not collide.
 */
class PgliteGateway {
  private server?: Server;
  private owner?: object;
  private readonly waiting: Array<() => void> = [];
  private readonly sockets = new Set<Socket>();

  constructor(private readonly db: Pglite) {}

  async listen(): Promise<number> {
    const server = createServer((socket) => this.serve(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", resolve);
    });
    return (server.address() as { port: number }).port;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    if (server) await new Promise((resolve) => server.close(resolve));
  }

  private async acquire(client: object): Promise<void> {
    while (this.owner && this.owner !== client)
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.owner = client;
  }

  private release(client: object): void {
    if (this.owner !== client) return;
    this.owner = undefined;
    this.waiting.shift()?.();
  }

  private run(bytes: Uint8Array, reply: (data: Uint8Array) => void): Promise<void> {
    return this.db.runExclusive(() => this.db.execProtocolRawStream(bytes, { onRawData: reply }));
  }

  private serve(socket: Socket): void {
    const client = {};
    this.sockets.add(socket);
    socket.setNoDelay(true);
    let buffer: Buffer = Buffer.alloc(0);
    let started = false;
    let busy = false;
    let closed = false;
    const statements = new Set<string>();
    const reply = (data: Uint8Array) => {
      if (!socket.destroyed && data.length) socket.write(data);
    };

    /** Handles the startup packet: SSL and GSS requests are declined, cancels are ignored. */
    const startup = async (): Promise<boolean> => {
      if (buffer.length < 8 || buffer.length < buffer.readInt32BE(0)) return false;
      const length = buffer.readInt32BE(0);
      const code = buffer.readInt32BE(4);
      const packet = buffer.subarray(0, length);
      buffer = buffer.subarray(length);
      if (code === SSL_REQUEST || code === GSSENC_REQUEST) socket.write("N");
      else if (code === CANCEL_REQUEST) socket.end();
      else {
        await this.acquire(client);
        try {
          await this.run(packet, reply);
        } finally {
          this.release(client);
        }
        started = true;
      }
      return true;
    };

    /** Runs the complete messages up to the next Sync or Query; false when there are none. */
    const batch = async (): Promise<boolean> => {
      let end = 0;
      let last = "";
      while (end + 5 <= buffer.length) {
        const type = String.fromCharCode(buffer[end]);
        const size = 1 + buffer.readInt32BE(end + 1);
        if (type === "X" || end + size > buffer.length) {
          if (type === "X" && end === 0) socket.end();
          break;
        }
        if (type === "P") {
          const name = buffer.toString("utf8", end + 5, buffer.indexOf(0, end + 5));
          if (name) statements.add(name);
        }
        end += size;
        last = type;
        if (type === "S" || type === "Q") break;
      }
      if (end === 0) return false;
      const messages = buffer.subarray(0, end);
      buffer = buffer.subarray(end);
      await this.acquire(client);
      await this.run(messages, reply);
      if ((last === "S" || last === "Q") && !this.db.isInTransaction()) this.release(client);
      return true;
    };

    const pump = async () => {
      if (busy) return;
      busy = true;
      try {
        while (!closed && !socket.destroyed && (started ? await batch() : await startup()));
      } catch {
        socket.destroy();
      } finally {
        busy = false;
      }
    };

    socket.on("data", (chunk: Buffer) => {
      buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
      void pump();
    });
    socket.on("error", () => {});
    socket.on("close", async () => {
      closed = true;
      this.sockets.delete(socket);
      while (busy) await Bun.sleep(5);
      const midway = this.owner === client;
      if (!midway && statements.size === 0) return;
      await this.acquire(client);
      try {
        // A client gone mid-transaction or mid-batch leaves the session as it found it...
        if (midway) {
          await this.run(SYNC_MESSAGE, () => {});
          if (this.db.isInTransaction()) await this.db.exec("rollback");
        }
        // ...and its prepared statements go with it, as they would with a backend of its own.
        for (const name of statements)
          await this.db.exec(`deallocate "${name.replaceAll('"', '""')}"`).catch(() => {});
      } catch {
        // The client is gone either way; PGlite answers the next one as usual.
      } finally {
        this.release(client);
      }
    });
  }
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

const demoCatalog: Record<string, Array<[string, number]>> = {
  coffee: [
    ["Espresso beans, 1 kg", 2490],
    ["Filter roast, 500 g", 1290],
    ["Decaf beans, 250 g", 890],
  ],
  tea: [
    ["Sencha, 100 g", 990],
    ["Earl Grey, 250 g", 750],
    ["Rooibos, 200 g", 650],
  ],
  kitchen: [
    ["Stoneware mug", 1299],
    ["Pour-over dripper", 2200],
    ["Burr grinder", 8900],
  ],
  books: [
    ["The coffee atlas", 3500],
    ["Tea, a short history", 1800],
    ["Brewing at home", 2400],
  ],
};

const tokenTtl = "12h";

/** 4980 USD minor units as "49.80 USD" (amounts in the API are minor units). */
function money(minor: number, currency: string): string {
  const digits =
    new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions()
      .maximumFractionDigits ?? 2;
  return `${(minor / 10 ** digits).toFixed(digits)} ${currency}`;
}

async function token(subject: string, scope: string, jwtSecret: string): Promise<string> {
  let jwt = new SignJWT({ scope })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(subject)
    .setIssuedAt()
    .setExpirationTime(tokenTtl);
  if (env.AUTH_ISSUER) jwt = jwt.setIssuer(env.AUTH_ISSUER);
  if (env.AUTH_AUDIENCE) jwt = jwt.setAudience(env.AUTH_AUDIENCE);
  return jwt.sign(new TextEncoder().encode(jwtSecret));
}

/** Demo products on an empty catalog, one fresh order, and the lines that tell how to use them. */
async function demo(apiUrl: string, paymentsPort: number, jwtSecret: string): Promise<string[]> {
  if (env.AUTH_JWKS_URL)
    throw new StartError("AUTH_JWKS_URL is set, so the api takes no tokens we can sign");
  const adminToken = await token("demo-admin", "admin", jwtSecret);
  const customerToken = await token("alice", "customer", jwtSecret);
  const call = async <T>(method: string, path: string, bearer: string, body?: unknown) => {
    const response = await fetch(`${apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${bearer}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok)
      throw new StartError(`${method} ${path} answered ${response.status}: ${text.slice(0, 200)}`);
    return JSON.parse(text) as T;
  };
  type Page = { total: number; items: Array<{ id: number; name: string }> };

  const catalog = await call<Page>("GET", "/api/products?per_page=1", adminToken);
  if (catalog.total === 0) {
    let count = 0;
    for (const [category, products] of Object.entries(demoCatalog))
      for (const [name, price] of products) {
        await call("POST", "/api/products", adminToken, { name, price, category });
        count++;
      }
    say(`created ${count} demo products in ${Object.keys(demoCatalog).length} categories`);
  }
  const [product] = (await call<Page>("GET", "/api/products?per_page=1", adminToken)).items;
  const order = await call<{ order_id: number; amount: number; currency: string }>(
    "POST",
    "/api/orders",
    customerToken,
    { product_id: product.id, qty: 2 },
  );
  const webhook = [
    `npm run webhook -- --order ${order.order_id} --amount ${order.amount}`,
    // A fresh id: a NATS shared with another stack may hold the derived id in its dedup window.
    ` --id evt_demo_${order.order_id}_${randomBytes(4).toString("hex")}`,
    order.currency === "USD" ? "" : ` --currency ${order.currency}`,
    paymentsPort === 3001 ? "" : ` --url http://127.0.0.1:${paymentsPort}/api/webhooks/payment`,
  ].join("");
  return [
    `Tokens (valid ${tokenTtl}; more with npm run token -- --sub NAME [--admin]):`,
    `  export ADMIN_TOKEN=${adminToken}`,
    `  export TOKEN=${customerToken}`,
    `  curl -H "Authorization: Bearer $TOKEN" ${apiUrl}/api/products`,
    "",
    `Demo order ${order.order_id} (2 x ${product.name}, ${money(order.amount, order.currency)}) awaits payment; pay it as the provider would:`,
    `  ${webhook}`,
    `  curl -H "Authorization: Bearer $TOKEN" ${apiUrl}/api/orders/${order.order_id}`,
    "",
  ];
}

try {
  await main();
} catch (error) {
  process.stderr.write(
    `${label("start")}${error instanceof StartError ? error.message : errorText(error)}\n`,
  );
  await stopAll(1);
}

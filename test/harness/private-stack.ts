/**
 * A stack of its own (issue 38's rows and the paid path's plans): a private PostgreSQL (with
 * pg_stat_statements, fsync and synchronous commit on as deployed) and a private nats-server (with
 * its monitoring port, for `/varz`; JetStream's `sync_interval: always` as deployed when the
 * binary is 2.10 or later, 2.9 cannot), the api and payments against them, and a webhook
 * endpoint subscribed to every order event, answered 204 by a receiver in this process, which
 * tells `onDelivery` listeners each delivery's event and order. Nothing else runs against either
 * server, so every statement, commit, WAL fsync, NATS message and CPU tick they count is the
 * path's own.
 */
import { readdirSync, readFileSync } from "node:fs";
import { messageTopology } from "@commerce/shared/contract/messages";
import { connect, type NatsConnection } from "nats";
import postgres from "postgres";
import { freePort, jwtSecret, signToken, webhookSecret } from "./basics";
import {
  launch as launchProcess,
  type ServiceName,
  type ServiceProcess,
  serviceCommand,
} from "./launch";
import { PrivateNats } from "./nats-server";
import { PrivatePostgres } from "./postgres-server";

/** The application name of the harness's own connections (`sql`) to the private PostgreSQL. */
export const harnessApplication = "stack-harness";

export type PrivateStack = Awaited<ReturnType<typeof startPrivateStack>>;

/** User + system CPU of a process, in clock ticks (1/100 s); 0 once it is gone. */
export function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** Resident memory of a process in MiB (`VmRSS`); 0 once it is gone. */
export function rssMib(pid: number): number {
  try {
    const kib = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
    return Math.round((Number(kib ?? 0) / 1024) * 10) / 10;
  } catch {
    return 0;
  }
}

/** A webhook delivery as the receiver saw it: the event's type and order, when it came. */
export type Delivery = { type: string; order_id: number; at: number };

const parentOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
};

/** The servers' settings: as deployed (fsync on, synchronous commit), plus the statement counts. */
const postgresSettings = {
  fsync: "on",
  synchronous_commit: "on",
  shared_preload_libraries: "pg_stat_statements",
  "pg_stat_statements.max": "2000",
  "pg_stat_statements.track": "all",
  // Autovacuum on, as docs/operations.md says production runs; the seed analyzes its tables.
  autovacuum: "on",
  max_connections: "100",
  shared_buffers: "256MB",
};

export async function startPrivateStack(
  dir: string,
  {
    fromSources = true,
    env = {} as Record<string, string>,
    /** More PostgreSQL settings, e.g. auto_explain's to log every plan. */
    postgresExtra = {} as Record<string, string>,
  } = {},
) {
  const pg = new PrivatePostgres({ settings: { ...postgresSettings, ...postgresExtra } });
  await pg.start();
  const server = postgres(pg.url, { max: 1, onnotice: () => {} });
  await server.unsafe("create database commerce");
  await server.end({ timeout: 5 });
  const databaseUrl = pg.url.replace(/\/postgres$/, "/commerce");
  // Named, so a log that shows application names tells the harness's own statements apart.
  const sql = postgres(databaseUrl, {
    max: 4,
    onnotice: () => {},
    connection: { application_name: harnessApplication },
  });
  await sql`create extension if not exists pg_stat_statements`;

  const monitorPort = await freePort();
  // JetStream's fsync as shipped (`sync_interval: always`) where this nats-server knows it.
  const nats = new PrivateNats({ args: ["-m", String(monitorPort)], syncAlways: true });
  await nats.start();
  const prefix = "paid";
  const serviceEnv = {
    DATABASE_URL: databaseUrl,
    NATS_URL: nats.url,
    NATS_PREFIX: prefix,
    AUTH_JWT_SECRET: jwtSecret,
    PAYMENT_WEBHOOK_SECRETS: webhookSecret,
    HOLD_MAX_ORDERS: "0",
    HOLD_MAX_UNITS: "0",
    RATE_LIMIT_RPS: "0",
    LOG_LEVEL: "info",
    WEBHOOK_ALLOW_HTTP: "1",
    WEBHOOK_ALLOW_PRIVATE: "1",
    ...env,
  };
  const services: ServiceProcess[] = [];
  const start = async (name: ServiceName) => {
    const service = await launchProcess({
      name,
      command: serviceCommand(name, !fromSources),
      env: serviceEnv,
      output: { dir },
      readyTimeoutMs: 60_000,
    });
    services.push(service);
    return service;
  };
  // The api first: its migrations and streams; payments' after.
  const api = await start("api");
  const payments = await start("payments");
  const nc: NatsConnection = await connect({ servers: nats.url });
  let delivered = 0;
  const listeners = new Set<(delivery: Delivery) => void>();
  const receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const body = await request.text();
      delivered++;
      if (listeners.size > 0) {
        const at = performance.now();
        const event = JSON.parse(body) as { type: string; data: { order_id: number } };
        for (const listener of listeners)
          listener({ type: event.type, order_id: event.data.order_id, at });
      }
      return new Response(null, { status: 204 });
    },
  });
  const admin = await signToken("stack-admin", "admin");
  const endpoint = await fetch(`${api.url}/api/webhook-endpoints`, {
    method: "POST",
    headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
    body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}/hook`, events: ["*"] }),
  });
  if (endpoint.status !== 201)
    throw new Error(`endpoint: ${endpoint.status} ${await endpoint.text()}`);
  const postmaster = readPostmasterPid(pg.dir);

  /** CPU ticks of every process of the private PostgreSQL: the postmaster and its children. */
  const postgresTicks = () => {
    let total = cpuTicks(postmaster);
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (parentOf(Number(entry)) === postmaster) total += cpuTicks(Number(entry));
      } catch {}
    }
    return total;
  };
  const natsPid = natsPidOn(nats.port);

  return {
    pg,
    nats,
    nc,
    sql,
    api,
    payments,
    topology: messageTopology(prefix),
    monitorUrl: `http://127.0.0.1:${monitorPort}`,
    /** Webhook deliveries the receiver has answered. */
    delivered: () => delivered,
    /** Calls `listener` with each delivery from now on (when it came: performance.now()). */
    onDelivery(listener: (delivery: Delivery) => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    /** Resident memory of the api and payments, MiB. */
    rss: () => ({ api: rssMib(api.pid), payments: rssMib(payments.pid) }),
    /** CPU ticks (1/100 s) per process so far. */
    ticks: () => ({
      api: cpuTicks(api.pid),
      payments: cpuTicks(payments.pid),
      nats: cpuTicks(natsPid),
      postgres: postgresTicks(),
    }),
    async stop() {
      await nc.close().catch(() => {});
      await Promise.all(services.map((service) => service.stop("SIGTERM", 12_000)));
      receiver.stop(true);
      await sql.end({ timeout: 5 });
      await nats.dispose().catch(() => {});
      await pg.dispose();
    },
  };
}

function readPostmasterPid(dir: string): number {
  return Number(readFileSync(`${dir}/data/postmaster.pid`, "utf8").split("\n")[0]);
}

function natsPidOn(port: number): number {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() !== "nats-server") continue;
      const args = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (args[args.indexOf("-p") + 1] === String(port)) return Number(entry);
    } catch {}
  }
  throw new Error(`no nats-server on port ${port}`);
}

/**
 * Which durability a run's figures include (issue 38, item 4), read from the servers at run time:
 * PostgreSQL's `synchronous_commit`, `fsync` and synchronous standbys, and JetStream's fsync
 * (`sync_interval`, from the monitoring port's `/varz` when there is one, otherwise from the
 * server's version: 2.9 has no such setting and syncs on its own default). Beside it, what the
 * deployment ships (deploy/nats.conf, docker-compose.yml, deploy/kubernetes/base/postgres.yaml),
 * and each shipped setting the bench's servers do not run. A report starts with `renderDurability`.
 */
import { readFileSync } from "node:fs";
import { knowsSyncInterval, natsServerVersion } from "@commerce/testing/nats-server";
import type { PrivateStack } from "@commerce/testing/private-stack";
import type postgres from "postgres";
import { root } from "./harness";

export type Durability = {
  postgres: {
    synchronous_commit: string;
    fsync: string;
    wal_sync_method: string;
    synchronous_standbys: number;
  };
  nats: { version: string; sync: string; sync_always: boolean; source: string };
  shipped: { nats_sync_interval: string; synchronous_commit: string; synchronous_standbys: number };
};

type Varz = { version?: string; jetstream?: { config?: Record<string, unknown> } };

/** What the deployment's files set, read from them. */
function shipped(): Durability["shipped"] {
  const read = (path: string) => readFileSync(`${root}/${path}`, "utf8");
  const natsConf = read("deploy/nats.conf");
  const files = [read("docker-compose.yml"), read("deploy/kubernetes/base/postgres.yaml")];
  const commit = files.map((f) => /synchronous_commit\W+(\w+)/.exec(f)?.[1]).find(Boolean);
  const cluster = /synchronous:\s*\n(?:\s+.*\n)*?\s+number:\s*(\d+)/.exec(files[1]);
  return {
    nats_sync_interval: /sync_interval:\s*(\S+)/.exec(natsConf)?.[1] ?? "default",
    synchronous_commit: commit ?? "on",
    synchronous_standbys: Number(cluster?.[1] ?? 0),
  };
}

/** JetStream's fsync as the server runs it. */
function natsSync(version: string, varz?: Varz): Durability["nats"] {
  const config = varz?.jetstream?.config;
  if (config && knowsSyncInterval(version)) {
    const always = config.sync_always === true;
    const interval = Number(config.sync_interval ?? 0);
    const sync = always
      ? "always (each write fsynced before the ack)"
      : `every ${interval > 0 ? `${interval / 1e9} s` : "2 min (the default)"}`;
    return { version, sync, sync_always: always, source: "/varz" };
  }
  return {
    version,
    sync: knowsSyncInterval(version)
      ? "unknown (no monitoring port to read it from)"
      : `every 2 min (the default: ${version} has no sync_interval)`,
    sync_always: false,
    source: knowsSyncInterval(version) ? "none" : "the server's version",
  };
}

/** Reads what was in force: `monitorUrl` is the nats-server's monitoring port, when it has one. */
export async function readDurability(
  sql: postgres.Sql,
  nats: { version: string; monitorUrl?: string },
): Promise<Durability> {
  const [settings] = await sql<Record<string, string>[]>`
    select current_setting('synchronous_commit') as synchronous_commit,
      current_setting('fsync') as fsync, current_setting('wal_sync_method') as wal_sync_method,
      (select count(*) from pg_stat_replication where sync_state in ('sync', 'quorum'))::int
        as standbys`;
  const varz = nats.monitorUrl
    ? ((await (await fetch(`${nats.monitorUrl}/varz`)).json()) as Varz)
    : undefined;
  return {
    postgres: {
      synchronous_commit: settings.synchronous_commit,
      fsync: settings.fsync,
      wal_sync_method: settings.wal_sync_method,
      synchronous_standbys: Number(settings.standbys),
    },
    nats: natsSync(varz?.version ?? nats.version, varz),
    shipped: shipped(),
  };
}

/** The report's first lines: what was in force, and what is shipped that was not. */
export function renderDurability(d: Durability): string {
  const missing: string[] = [];
  if (d.shipped.nats_sync_interval === "always" && !d.nats.sync_always)
    missing.push(
      knowsSyncInterval(d.nats.version)
        ? "JetStream's `sync_interval: always` (deploy/nats.conf) was not in force: no figure includes JetStream's fsync per message"
        : `JetStream's \`sync_interval: always\` (deploy/nats.conf): nats-server ${d.nats.version} cannot run it (2.10+), so no figure includes JetStream's fsync per message`,
    );
  if (d.postgres.synchronous_commit !== d.shipped.synchronous_commit)
    missing.push(
      `PostgreSQL's synchronous_commit ${d.shipped.synchronous_commit} (shipped) was ${d.postgres.synchronous_commit} here`,
    );
  if (d.postgres.fsync !== "on") missing.push("PostgreSQL's fsync is off here, on as shipped");
  if (d.shipped.synchronous_standbys > d.postgres.synchronous_standbys)
    missing.push(
      `Kubernetes' ${d.shipped.synchronous_standbys} synchronous standby (deploy/kubernetes/base/postgres.yaml): one PostgreSQL here (as compose ships), a commit waits for the local disk only`,
    );
  return [
    "**Durability** (read from the servers at run time):",
    "",
    `- PostgreSQL: synchronous_commit ${d.postgres.synchronous_commit}, fsync ${d.postgres.fsync} (${d.postgres.wal_sync_method}), ${d.postgres.synchronous_standbys} synchronous standbys (the outbox relays' marks commit asynchronously by design).`,
    `- NATS ${d.nats.version}: JetStream fsync ${d.nats.sync} (from ${d.nats.source}).`,
    `- Shipped: JetStream sync_interval ${d.shipped.nats_sync_interval}; PostgreSQL synchronous_commit ${d.shipped.synchronous_commit}, ${d.shipped.synchronous_standbys} synchronous standby on Kubernetes.`,
    missing.length > 0
      ? `- **Not honoured here:** ${missing.join("; ")}.`
      : "- Every shipped durability setting was in force.",
    "",
  ].join("\n");
}

/** What a private stack (test/harness/private-stack.ts) runs. */
export const durabilityOf = (stack: PrivateStack) =>
  readDurability(stack.sql, {
    version: stack.nc.info?.version ?? natsServerVersion(),
    monitorUrl: stack.monitorUrl,
  });

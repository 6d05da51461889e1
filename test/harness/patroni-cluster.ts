import { type ChildProcess, spawn } from "node:child_process";
import {
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { answers, eventually } from "./basics";

/**
 * X2: a PostgreSQL cluster managed by Patroni on loopback, for the failover tests and the chaos
 * run: one etcd member, three PostgreSQL 15 nodes (synchronous_mode_strict, so a commit that was
 * acknowledged is on two nodes) and HAProxy in front following Patroni's `/primary` check. Debian's
 * `patroni`, `etcd-server` and `haproxy` packages; `.ci/run` installs them when missing.
 *
 * Every port is fixed from `base` (etcd base, base+1; node i: PostgreSQL base+10+i, REST
 * base+20+i; HAProxy base+30), so a cluster's ports are known once it has started. The default
 * base is below Linux's ephemeral range (32768–60999), where no other harness's free port or
 * outgoing connection lands; a base with a port taken (a node left over from a killed run) is
 * moved up by 100. Patroni runs as the `postgres` OS user (PostgreSQL refuses root), spawned with
 * its uid/gid so its pid stays ours. Each process writes to a log in the cluster's folder, and a
 * start that fails says what they wrote.
 *
 * X6: with `{ backups: true }` every node archives its WAL with pgBackRest (Debian's package) to
 * one posix repository in the cluster's folder (`backrest/repo`), `archive_command` set in each
 * node's `postgresql.parameters` with that node's own pgBackRest configuration; `backup()` takes a
 * base backup from the leader and `restore()` makes a point-in-time copy in a new data directory
 * and runs it as a cluster of its own (a `RestoredCluster`).
 */
export type Member = {
  name: string;
  role: string;
  state: string;
  port: number;
  timeline?: number;
  lag?: number;
};

const binDir = "/usr/lib/postgresql/15/bin";

function postgresIds(): { uid: number; gid: number } {
  const id = (flag: string) => Bun.spawnSync(["id", flag, "postgres"]).stdout.toString().trim();
  return { uid: Number(id("-u")), gid: Number(id("-g")) };
}

/** The last `lines` lines of a log file, or nothing if it is not there. */
function tail(file: string, lines = 15): string {
  if (!existsSync(file)) return "";
  const text = readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  return text ? `--- ${file}\n${text}\n` : "";
}

export class PatroniCluster {
  dir = mkdtempSync(join(tmpdir(), "patroni-"));
  scope = `x2${Date.now().toString(36)}`;
  readonly names = ["n1", "n2", "n3"];
  private readonly patroni = new Map<string, ChildProcess>();
  private etcd?: ChildProcess;
  private haproxy?: ChildProcess;
  private restored?: RestoredCluster;

  constructor(
    public base = 27100,
    readonly options: { backups?: boolean; adopt?: string } = {},
  ) {}

  /**
   * Node `name`'s data directory. With `adopt` (X6: a restored data directory), the first node
   * takes that one over instead of running initdb: Patroni, finding no cluster in etcd and a data
   * directory that is not empty, starts it and becomes its leader; the others clone it.
   */
  dataDir(name: string): string {
    if (name === "n1" && this.options.adopt) return this.options.adopt;
    return join(this.dir, name, "data");
  }

  /** The pgBackRest stanza every node archives to (X6). */
  readonly stanza = "commerce";
  private get backrestDir() {
    return join(this.dir, "backrest");
  }

  private pgPort = (name: string) => this.base + 10 + this.names.indexOf(name);
  private restPort = (name: string) => this.base + 20 + this.names.indexOf(name);
  get haproxyPort() {
    return this.base + 30;
  }

  /** Every node, the driver picking the primary (X2's first way). */
  multiHostUrl(database = "postgres"): string {
    const hosts = this.names.map((name) => `127.0.0.1:${this.pgPort(name)}`).join(",");
    return `postgres://postgres@${hosts}/${database}?target_session_attrs=primary`;
  }

  /** One address, HAProxy sending it to the primary (X2's other way). */
  haproxyUrl(database = "postgres"): string {
    return `postgres://postgres@127.0.0.1:${this.haproxyPort}/${database}`;
  }

  /** One node by itself (e.g. a standby, to start a service on). */
  nodeUrl(name: string, database = "postgres"): string {
    return `postgres://postgres@127.0.0.1:${this.pgPort(name)}/${database}`;
  }

  private config(name: string): string {
    const node = join(this.dir, name);
    return JSON.stringify({
      scope: this.scope,
      namespace: "/failover/",
      name,
      log: { level: "WARNING", dir: node },
      restapi: {
        listen: `127.0.0.1:${this.restPort(name)}`,
        connect_address: `127.0.0.1:${this.restPort(name)}`,
      },
      etcd3: { host: `127.0.0.1:${this.base}` },
      bootstrap: {
        dcs: {
          ttl: 10,
          loop_wait: 2,
          retry_timeout: 4,
          maximum_lag_on_failover: 1048576,
          synchronous_mode: true,
          synchronous_mode_strict: true,
          // Both standbys synchronous: Patroni promotes the more advanced, so the other is never
          // ahead of the new leader's timeline (an asynchronous standby that had received WAL
          // the promoted one never had stayed on the old timeline, and in strict mode the new
          // leader then had no standby to commit with).
          synchronous_node_count: 2,
          postgresql: {
            // An asynchronous standby may have received WAL the promoted one never had: it is
            // rewound (or, failing that, cloned again) to follow the new timeline.
            use_pg_rewind: true,
            remove_data_directory_on_rewind_failure: true,
            remove_data_directory_on_diverged_timelines: true,
            // A SIGKILL is not a power cut: the page cache survives, so fsync only costs time.
            // A standby retries its WAL source every 5 s by default: after a promotion the remaining
            // one would follow the new leader (and so let it commit again) that much later.
            parameters: {
              fsync: "off",
              max_connections: 100,
              wal_keep_size: "64MB",
              wal_retrieve_retry_interval: "500ms",
            },
          },
        },
        initdb: [{ encoding: "UTF8" }, { "auth-local": "trust" }],
      },
      postgresql: {
        listen: `127.0.0.1:${this.pgPort(name)}`,
        connect_address: `127.0.0.1:${this.pgPort(name)}`,
        data_dir: this.dataDir(name),
        bin_dir: binDir,
        pgpass: join(node, "pgpass"),
        authentication: {
          replication: { username: "replicator", password: "replicator" },
          superuser: { username: "postgres", password: "postgres" },
        },
        parameters: {
          unix_socket_directories: node,
          ...(this.options.backups && {
            archive_mode: "on",
            archive_command: `pgbackrest --config=${this.backrestConfig(name)} --stanza=${this.stanza} archive-push "%p"`,
          }),
        },
        pg_hba: [
          "local all all trust",
          "host replication replicator 127.0.0.1/32 trust",
          "host all all 127.0.0.1/32 trust",
        ],
      },
    });
  }

  /** Where node `name`'s pgBackRest configuration is (X6). */
  backrestConfig(name: string): string {
    return join(this.dir, name, "pgbackrest.conf");
  }

  /**
   * One repository for the cluster, each node's configuration naming its own data directory: the
   * node that archives or is backed up is always the one pgBackRest runs for.
   */
  private writeBackrestConfig(name: string, dataDir = this.dataDir(name)): string {
    const { uid, gid } = postgresIds();
    for (const sub of ["", "repo", "log", "lock"]) {
      mkdirSync(join(this.backrestDir, sub), { recursive: true, mode: 0o750 });
      chownSync(join(this.backrestDir, sub), uid, gid);
    }
    const file = name === "restored" ? join(this.dir, "restored.conf") : this.backrestConfig(name);
    const socketDir = name === "restored" ? join(this.dir, "restored") : join(this.dir, name);
    const port = name === "restored" ? this.restoredPort : this.pgPort(name);
    writeFileSync(
      file,
      `[global]
repo1-path=${join(this.backrestDir, "repo")}
repo1-retention-full=2
log-path=${join(this.backrestDir, "log")}
lock-path=${join(this.backrestDir, "lock")}
log-level-console=warn
log-level-file=info
compress-type=lz4
start-fast=y
archive-timeout=60

[${this.stanza}]
pg1-path=${dataDir}
pg1-port=${port}
pg1-socket-path=${socketDir}
pg1-user=postgres
`,
    );
    chownSync(file, uid, gid);
    return file;
  }

  /** The port a restored copy listens on (X6). */
  get restoredPort() {
    return this.base + 40;
  }

  /** pgBackRest as the `postgres` OS user (it owns the data and the repository). */
  async backrest(name: string, args: string[], config = this.backrestConfig(name)) {
    const { uid, gid } = postgresIds();
    return runAs(uid, gid, "pgbackrest", [
      `--config=${config}`,
      `--stanza=${this.stanza}`,
      ...args,
    ]);
  }

  /** X6: the stanza made once the leader runs (`stanza-create`), and checked (`check` archives a segment). */
  private async createStanza(): Promise<void> {
    const leader = await this.waitForLeader();
    await this.backrest(leader, ["stanza-create"]);
    await this.backrest(leader, ["check"]);
  }

  /**
   * X6: a base backup of the leader: its label (e.g. `20261128-034501F`) and the WAL positions it
   * started and stopped at (a restore replays from the start).
   */
  async backup(
    type: "full" | "diff" | "incr" = "full",
  ): Promise<{ label: string; startLsn: string; stopLsn: string }> {
    const leader = await this.waitForLeader();
    await this.backrest(leader, [`--type=${type}`, "backup"]);
    const info = JSON.parse(await this.backrest(leader, ["--output=json", "info"])) as {
      backup: { label: string; lsn: { start: string; stop: string } }[];
    }[];
    const newest = info[0].backup.at(-1);
    if (!newest) throw new Error("pgBackRest lists no backup after taking one");
    return { label: newest.label, startLsn: newest.lsn.start, stopLsn: newest.lsn.stop };
  }

  /**
   * X6: makes sure every WAL written so far is in the repository: a switch to a new segment, then
   * `check`, which waits until the switched segment is archived.
   */
  async archiveNow(): Promise<void> {
    const leader = await this.waitForLeader();
    await this.backrest(leader, ["check"]);
  }

  /**
   * X6: a point-in-time restore of the latest backup and the archived WAL to `target` (a
   * timestamp PostgreSQL reads, e.g. `2026-11-28 03:50:00.123456+00`) into a new data directory,
   * started as a cluster of its own on `restoredPort` (no archiving, no standbys), ready once it
   * has replayed to `target` and promoted itself. `backupSet` names the backup to start from
   * (pgBackRest otherwise takes the newest that ended before `target`, to the second). Its
   * `restoreMs` (files copied) and `recoveryMs` (WAL replayed, promoted) say how long it took.
   */
  async restore(target: string, backupSet?: string): Promise<RestoredCluster> {
    const { uid, gid } = postgresIds();
    const home = join(this.dir, "restored");
    const dataDir = join(home, "data");
    rmSync(home, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    chownSync(home, uid, gid);
    chownSync(dataDir, uid, gid);
    const config = this.writeBackrestConfig("restored", dataDir);
    const started = performance.now();
    await this.backrest(
      "restored",
      [
        "--type=time",
        `--target=${target}`,
        "--target-action=promote",
        // The copy is a new cluster: it must never push its own timeline into the stanza.
        "--archive-mode=off",
        ...(backupSet ? [`--set=${backupSet}`] : []),
        "restore",
      ],
      config,
    );
    const restoredMs = performance.now() - started;
    const restored = new RestoredCluster(home, dataDir, this.restoredPort, uid, gid);
    this.restored = restored;
    await restored.start();
    return Object.assign(restored, {
      restoreMs: Math.round(restoredMs),
      recoveryMs: Math.round(performance.now() - started - restoredMs),
    });
  }

  private spawnNode(name: string): void {
    const node = join(this.dir, name);
    const { uid, gid } = postgresIds();
    mkdirSync(node, { recursive: true, mode: 0o700 });
    const file = join(node, "patroni.yml");
    // JSON is YAML.
    writeFileSync(file, this.config(name));
    chownSync(node, uid, gid);
    chownSync(file, uid, gid);
    if (this.options.backups) this.writeBackrestConfig(name);
    const log = openSync(join(node, "out.log"), "a");
    const child = spawn("patroni", [file], {
      uid,
      gid,
      cwd: node,
      env: { PATH: process.env.PATH, HOME: node, LANG: "C.UTF-8" },
      stdio: ["ignore", log, log],
    });
    closeSync(log);
    this.patroni.set(name, child);
  }

  /**
   * Starts the cluster and waits until it is healthy. A first node's bootstrap can outlast its
   * minute on a loaded machine: a start that fails is tried once more from nothing, on ports
   * checked free again; a second failure throws with the tail of every process's log.
   */
  async start(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.choosePorts();
        await this.startOnce();
        return;
      } catch (error) {
        const logs = this.logTails();
        await this.stop();
        if (attempt === 2) throw new Error(`the Patroni cluster did not start: ${error}\n${logs}`);
        console.log(`[patroni] the cluster did not start (${error}); once more\n${logs}`);
        this.dir = mkdtempSync(join(tmpdir(), "patroni-"));
        this.scope = `x2${Date.now().toString(36)}`;
      }
    }
  }

  private ports(): number[] {
    const nodes = this.names.flatMap((name) => [this.pgPort(name), this.restPort(name)]);
    const restored = this.options.backups ? [this.restoredPort] : [];
    return [this.base, this.base + 1, ...nodes, this.haproxyPort, ...restored];
  }

  /** Moves `base` up by 100 until every port of the cluster is free (ten tries). */
  private async choosePorts(): Promise<void> {
    for (let tries = 0; tries < 10; tries++, this.base += 100) {
      const taken = await Promise.all(
        this.ports().map((port) => answers({ host: "127.0.0.1", port })),
      );
      if (!taken.some(Boolean)) return;
    }
    throw new Error(`no free ports for a Patroni cluster up to base ${this.base}`);
  }

  private logTails(): string {
    const files = [join(this.dir, "etcd.log"), join(this.dir, "haproxy.log")];
    for (const name of this.names) {
      files.push(join(this.dir, name, "out.log"), join(this.dir, name, "patroni.log"));
    }
    return files.map((file) => tail(file)).join("");
  }

  private async startOnce(): Promise<void> {
    chownSync(this.dir, postgresIds().uid, postgresIds().gid);
    const peer = `http://127.0.0.1:${this.base + 1}`;
    const client = `http://127.0.0.1:${this.base}`;
    const etcdLog = openSync(join(this.dir, "etcd.log"), "a");
    this.etcd = spawn(
      "etcd",
      [
        "--name=e1",
        `--data-dir=${join(this.dir, "etcd")}`,
        `--listen-client-urls=${client}`,
        `--advertise-client-urls=${client}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=e1=${peer}`,
      ],
      {
        stdio: ["ignore", etcdLog, etcdLog],
        env: { ...process.env, ETCD_UNSUPPORTED_ARCH: "" },
      },
    );
    closeSync(etcdLog);
    await eventually(
      () =>
        fetch(`${client}/health`)
          .then((r) => (r.ok ? true : undefined))
          .catch(() => undefined),
      15_000,
      "etcd",
    );
    // The first node bootstraps alone, so it is the one leader; the others then clone it.
    this.spawnNode("n1");
    await this.waitForLeader(undefined, 60_000);
    this.spawnNode("n2");
    this.spawnNode("n3");
    await this.waitHealthy();
    if (this.options.backups) await this.createStanza();
    this.startHaproxy();
  }

  /** A leader and two synchronous standbys, caught up: the cluster can lose its leader. */
  async waitHealthy(timeoutMs = 90_000): Promise<void> {
    await eventually(
      async () => {
        const members = await this.members().catch(() => []);
        const running = (role: string) =>
          members.some((m) => m.role === role && ["running", "streaming"].includes(m.state));
        const timeline = members.find((m) => m.role === "leader")?.timeline;
        // Patroni 3.0 says "running" of a standby stuck on an old timeline too: each must be on
        // the leader's timeline and caught up.
        return members.length === 3 &&
          running("leader") &&
          members.every((m) => m.role === "leader" || m.role === "sync_standby") &&
          members.every(
            (m) =>
              ["running", "streaming"].includes(m.state) &&
              m.timeline === timeline &&
              (m.lag ?? 0) < 1_000_000,
          )
          ? true
          : undefined;
      },
      timeoutMs,
      "a healthy Patroni cluster (a leader, two sync standbys)",
    );
  }

  private startHaproxy(): void {
    const servers = this.names
      .map(
        (name) =>
          `  server ${name} 127.0.0.1:${this.pgPort(name)} check port ${this.restPort(name)}`,
      )
      .join("\n");
    const file = join(this.dir, "haproxy.cfg");
    writeFileSync(file, haproxyConfig(this.haproxyPort, servers));
    const log = openSync(join(this.dir, "haproxy.log"), "a");
    this.haproxy = spawn("haproxy", ["-db", "-f", file], { stdio: ["ignore", log, log] });
    closeSync(log);
  }

  /** The members as any living node's REST API reports them. */
  async members(): Promise<Member[]> {
    for (const name of this.names) {
      try {
        const response = await fetch(`http://127.0.0.1:${this.restPort(name)}/cluster`, {
          signal: AbortSignal.timeout(1_000),
        });
        if (response.ok) return ((await response.json()) as { members: Member[] }).members;
      } catch {}
    }
    return [];
  }

  /** The leader's name, if a living node names one that is running. */
  async leader(): Promise<string | undefined> {
    const members = await this.members();
    return members.find((m) => m.role === "leader" && m.state === "running")?.name;
  }

  /** Waits for a leader other than `notName` (a survivor may still name the killed one until the TTL). */
  async waitForLeader(notName?: string, timeoutMs = 60_000): Promise<string> {
    return eventually(
      async () => {
        const leader = await this.leader().catch(() => undefined);
        if (!leader || leader === notName) return undefined;
        // The new leader's own REST API says it is the primary: it has been promoted.
        const primary = await fetch(`http://127.0.0.1:${this.restPort(leader)}/primary`, {
          signal: AbortSignal.timeout(1_000),
        }).catch(() => undefined);
        return primary?.status === 200 ? leader : undefined;
      },
      timeoutMs,
      `a leader other than ${notName}`,
    );
  }

  /**
   * When (performance.now()) a transaction first commits on the cluster: under
   * synchronous_mode_strict a new leader commits only once a standby follows it again.
   */
  async whenWritable(timeoutMs = 30_000): Promise<number> {
    const { default: postgres } = await import("postgres");
    const sql = postgres(this.multiHostUrl(), { max: 1, connect_timeout: 1, onnotice: () => {} });
    try {
      return await eventually(
        async () => {
          const committed = await Promise.race([
            sql`select txid_current()`.then(() => true).catch(() => false),
            Bun.sleep(300).then(() => false),
          ]);
          return committed ? performance.now() : undefined;
        },
        timeoutMs,
        "a commit on the new leader",
      );
    } finally {
      await sql.end({ timeout: 1 });
    }
  }

  /** A member in `role` (e.g. "sync_standby"). */
  async memberIn(role: string): Promise<string> {
    return eventually(
      async () => (await this.members()).find((m) => m.role === role)?.name,
      30_000,
      `a ${role}`,
    );
  }

  /** Until HAProxy sends connections to the leader only (it starts with every server up). */
  async waitForHaproxy(): Promise<void> {
    const leader = await this.waitForLeader();
    await eventually(
      async () => {
        const { default: postgres } = await import("postgres");
        const sql = postgres(this.haproxyUrl(), { max: 1, connect_timeout: 2, onnotice: () => {} });
        try {
          const [row] =
            await sql`select pg_is_in_recovery() as standby, inet_server_port() as port`;
          return !row.standby && row.port === this.pgPort(leader) ? true : undefined;
        } catch {
          return undefined;
        } finally {
          await sql.end({ timeout: 1 });
        }
      },
      30_000,
      "HAProxy to route to the primary",
    );
  }

  /** A planned switchover to `candidate` (a synchronous standby): Patroni's own REST call. */
  async switchover(candidate: string): Promise<void> {
    const leader = await this.waitForLeader();
    const response = await fetch(`http://127.0.0.1:${this.restPort(leader)}/switchover`, {
      method: "POST",
      body: JSON.stringify({ leader, candidate }),
    });
    if (!response.ok) throw new Error(`switchover refused: ${await response.text()}`);
  }

  /**
   * SIGKILL of the leader's Patroni, its postmaster and the postmaster's children: the machine
   * is gone. `leader`, when the caller knows it, saves asking. Returns the killed node's name and
   * when it was killed (performance.now()).
   */
  async killLeader(leader?: string): Promise<{ name: string; at: number }> {
    return this.signalNode("SIGKILL", leader ?? (await this.waitForLeader()));
  }

  /**
   * X5 (v5): pauses a node whole (its Patroni, postmaster and backends, SIGSTOP); `resumeNode`
   * wakes them (SIGCONT). A leader paused longer than the TTL loses its key and a standby is
   * promoted meanwhile; woken, it finds itself demoted.
   */
  pauseNode(name: string): Promise<{ name: string; at: number }> {
    return Promise.resolve(this.signalNode("SIGSTOP", name));
  }

  resumeNode(name: string): void {
    this.signalNode("SIGCONT", name);
  }

  private signalNode(signal: NodeJS.Signals, name: string): { name: string; at: number } {
    const postmaster = Number(
      readFileSync(join(this.dataDir(name), "postmaster.pid"), "utf8").split("\n")[0],
    );
    const children = Bun.spawnSync(["pgrep", "-P", String(postmaster)])
      .stdout.toString()
      .split("\n")
      .filter(Boolean)
      .map(Number);
    const at = performance.now();
    this.patroni.get(name)?.kill(signal);
    for (const pid of [postmaster, ...children]) {
      try {
        process.kill(pid, signal);
      } catch {}
    }
    return { name, at };
  }

  /**
   * Brings a killed node back as a fresh replica (its data directory removed, so Patroni clones
   * the new leader: the old timeline may hold WAL the others never had).
   */
  async rejoin(name: string): Promise<void> {
    rmSync(this.dataDir(name), { recursive: true, force: true });
    this.spawnNode(name);
    await this.waitHealthy();
  }

  async stop(): Promise<void> {
    await this.restored?.stop();
    this.haproxy?.kill("SIGKILL");
    this.haproxy = undefined;
    for (const [name, child] of this.patroni) {
      child.kill("SIGKILL");
      try {
        const pid = Number(
          readFileSync(join(this.dataDir(name), "postmaster.pid"), "utf8").split("\n")[0],
        );
        // SIGQUIT: PostgreSQL's immediate shutdown, its backends with it.
        if (pid > 0) process.kill(pid, "SIGQUIT");
      } catch {}
    }
    this.patroni.clear();
    this.etcd?.kill("SIGKILL");
    this.etcd = undefined;
    await Bun.sleep(500);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Runs `command` as uid/gid; its output, or an error with what it wrote. */
function runAs(uid: number, gid: number, command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      uid,
      gid,
      cwd: tmpdir(),
      env: { PATH: process.env.PATH, LANG: "C.UTF-8" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0
        ? resolve(output)
        : reject(new Error(`${command} ${args.join(" ")} exited ${code}: ${output.trim()}`)),
    );
  });
}

/**
 * X6: a data directory restored by pgBackRest, run by `pg_ctl` as a one-node cluster on loopback.
 * Patroni's postgresql.conf came with the backup; the command line overrides what named the old
 * node (its port, sockets, pg_hba) or waits on standbys that this copy has none of.
 */
export class RestoredCluster {
  restoreMs = 0;
  recoveryMs = 0;

  constructor(
    readonly home: string,
    readonly dataDir: string,
    readonly port: number,
    private readonly uid: number,
    private readonly gid: number,
  ) {}

  url(database = "postgres"): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  private pgCtl(args: string[]) {
    return runAs(this.uid, this.gid, join(binDir, "pg_ctl"), ["-D", this.dataDir, ...args]);
  }

  /** Starts it and waits until recovery reached its target and it was promoted (writable). */
  async start(): Promise<void> {
    const options = [
      `-c port=${this.port}`,
      "-c listen_addresses=127.0.0.1",
      `-c unix_socket_directories=${this.home}`,
      `-c hba_file=${join(this.dataDir, "pg_hba.conf")}`,
      `-c ident_file=${join(this.dataDir, "pg_ident.conf")}`,
      "-c synchronous_standby_names=",
      "-c cluster_name=restored",
    ].join(" ");
    await this.pgCtl([
      "-w",
      "-t",
      "300",
      "-l",
      join(this.home, "postgres.log"),
      "-o",
      options,
      "start",
    ]);
    const { default: postgres } = await import("postgres");
    const sql = postgres(this.url(), { max: 1, onnotice: () => {} });
    try {
      await eventually(
        async () => {
          const [row] = await sql`select pg_is_in_recovery() as recovering`.catch(() => [
            { recovering: true },
          ]);
          return row.recovering ? undefined : true;
        },
        300_000,
        "the restored cluster to reach its target and promote",
      );
    } finally {
      await sql.end({ timeout: 1 });
    }
  }

  /** What PostgreSQL logged while it restored (recovery's last lines say where it stopped). */
  log(lines = 20): string {
    return tail(join(this.home, "postgres.log"), lines);
  }

  /** `fast` shuts down cleanly (a checkpoint), so another cluster may take the directory over. */
  async stop(mode: "immediate" | "fast" = "immediate"): Promise<void> {
    await this.pgCtl(["-m", mode, "stop"]).catch(() => {});
  }
}

/**
 * HAProxy in front of the cluster exactly as Patroni's documentation configures it (X2 v5: what a
 * user runs, with nothing tuned for the services; docs/failover.md shows the same): TCP to
 * whichever node answers Patroni's `GET /primary` with 200, HAProxy's default `retries` (3), and a
 * node marked down has its sessions cut, so no client stays on a demoted or dead node.
 */
export const haproxyConfig = (port: number, servers: string) => `global
  maxconn 300

defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 1s

listen postgres_primary
  bind 127.0.0.1:${port}
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
${servers}
`;

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import type { Subprocess } from "bun";
import { connect } from "nats";
import { eventually, freePort } from "./basics";

export type PrivateNatsOptions = {
  /**
   * A configuration file to include (e.g. deploy/nats-auth.conf): users and permissions. The
   * port, JetStream and the store directory still come from the command line.
   */
  include?: string;
  /** Environment of the server, for the `$VAR` references of the included file. */
  env?: Record<string, string>;
  /** More command-line arguments, e.g. `-DV` to trace every message into the log. */
  args?: string[];
  /** The client port; default a free one, kept across restarts. */
  port?: number;
  /**
   * JetStream's fsync as the deployment ships it (deploy/nats.conf: `sync_interval: always`),
   * when the binary knows the setting (2.10 and later); 2.9 refuses it, and runs its default.
   */
  syncAlways?: boolean;
};

/** The version of the machine's nats-server binary, e.g. "2.9.10". */
export function natsServerVersion(): string {
  const binary = Bun.which("nats-server") ?? "/usr/sbin/nats-server";
  const out = Bun.spawnSync([binary, "--version"]).stdout.toString();
  return /v?(\d+\.\d+\.\d+)/.exec(out)?.[1] ?? "unknown";
}

/** Whether a nats-server of `version` knows `sync_interval` (2.10 and later). */
export function knowsSyncInterval(version: string): boolean {
  const [major, minor] = version.split(".").map(Number);
  return major > 2 || (major === 2 && minor >= 10);
}

/**
 * A private `nats-server -js` on a free port with its own store directory, so a test can stop and
 * start it without touching the machine's shared server. Its log is `logFile`.
 */
export class PrivateNats {
  private process?: Subprocess;
  readonly storeDir = mkdtempSync(join(tmpdir(), "nats-e2e-"));
  readonly logFile = join(this.storeDir, "nats-server.log");
  port = 0;

  constructor(private readonly options: PrivateNatsOptions = {}) {
    this.port = options.port ?? 0;
  }

  /** Whether the process is running. */
  get running(): boolean {
    return this.process !== undefined && this.process.exitCode === null && !this.process.killed;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** X5: sends a signal (SIGSTOP pauses the server, SIGCONT resumes it). */
  signal(signal: NodeJS.Signals): void {
    this.process?.kill(signal);
  }

  /** What the server has logged so far. */
  async log(): Promise<string> {
    const file = Bun.file(this.logFile);
    return (await file.exists()) ? file.text() : "";
  }

  async start(): Promise<void> {
    this.port ||= await freePort();
    const binary = Bun.which("nats-server") ?? "/usr/sbin/nats-server";
    const args = ["-a", "127.0.0.1", "-p", String(this.port), "-js", "-sd", this.storeDir];
    const config: string[] = [];
    // nats-server resolves an include relative to the including file, even an absolute path.
    if (this.options.include)
      config.push(`include "${relative(this.storeDir, this.options.include)}"`);
    if (this.options.syncAlways && knowsSyncInterval(natsServerVersion()))
      config.push("jetstream { sync_interval: always }");
    if (config.length > 0) {
      const file = join(this.storeDir, "nats.conf");
      writeFileSync(file, `${config.join("\n")}\n`);
      args.push("-c", file);
    }
    args.push(...(this.options.args ?? []), "-l", this.logFile);
    this.process = Bun.spawn([binary, ...args], {
      env: { PATH: process.env.PATH ?? "", ...this.options.env },
      stdout: "ignore",
      stderr: "ignore",
    });
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (this.process.exitCode !== null)
        throw new Error(`private nats-server exited: ${await this.log()}`);
      try {
        const socket = await Bun.connect({
          hostname: "127.0.0.1",
          port: this.port,
          socket: { data() {} },
        });
        socket.end();
        return;
      } catch {
        await Bun.sleep(50);
      }
    }
    throw new Error("private nats-server did not start");
  }

  /** SIGTERM stops it cleanly; SIGKILL is a crash. */
  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    this.process?.kill(signal);
    await this.process?.exited;
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}

/**
 * Three private `nats-server -js` on loopback, routed to each other as one cluster, each with its
 * own store directory and server name (`n1`..`n3`), so a test may kill and restart any node.
 * `url` lists all three, as a service's NATS_URL would.
 */
export class PrivateNatsCluster {
  readonly nodes: PrivateNats[] = [];
  readonly names = ["n1", "n2", "n3"];
  private readonly clusterName = `c${crypto.randomUUID().slice(0, 8)}`;

  get url(): string {
    return this.nodes.map((node) => node.url).join(",");
  }

  /** The node that runs as server `name`. */
  node(name: string): PrivateNats {
    const node = this.nodes[this.names.indexOf(name)];
    if (!node) throw new Error(`no node ${name}`);
    return node;
  }

  private monitorPorts: number[] = [];

  async start(): Promise<void> {
    const routePorts = await Promise.all(this.names.map(() => freePort()));
    const ports = await Promise.all(this.names.map(() => freePort()));
    this.monitorPorts = await Promise.all(this.names.map(() => freePort()));
    const routes = routePorts.map((port) => `nats://127.0.0.1:${port}`).join(",");
    this.nodes.push(
      ...this.names.map(
        (name, i) =>
          new PrivateNats({
            port: ports[i],
            args: [
              "--server_name",
              name,
              "--cluster_name",
              this.clusterName,
              "--cluster",
              `nats://127.0.0.1:${routePorts[i]}`,
              "--routes",
              routes,
              "--http_port",
              String(this.monitorPorts[i]),
            ],
          }),
      ),
    );
    await Promise.all(this.nodes.map((node) => node.start()));
    await this.jetStreamReady();
  }

  /** Waits until JetStream answers through the cluster, i.e. it has a meta leader. */
  async jetStreamReady(timeoutMs = 30_000): Promise<void> {
    const running = this.nodes.filter((node) => node.running);
    const nc = await connect({ servers: running.map((node) => node.url), reconnect: false });
    try {
      await eventually(
        async () => {
          try {
            // Only the meta leader answers account information.
            await (await nc.jetstreamManager()).getAccountInfo();
            return true;
          } catch {
            return undefined;
          }
        },
        timeoutMs,
        "a JetStream meta leader",
      );
    } finally {
      await nc.close();
    }
  }

  /** The names of the clients connected to node `name` (a service connects as its own name). */
  async clientsOf(name: string): Promise<string[]> {
    const port = this.monitorPorts[this.names.indexOf(name)];
    try {
      const response = await fetch(`http://127.0.0.1:${port}/connz`);
      const { connections = [] } = (await response.json()) as { connections?: { name?: string }[] };
      return connections.map((c) => c.name ?? "");
    } catch {
      return [];
    }
  }

  async dispose(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.dispose()));
  }
}

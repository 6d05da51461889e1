import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import type { Subprocess } from "bun";
import { freePort } from "./basics";

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
};

/**
 * A private `nats-server -js` on a free port with its own store directory, so a test can stop and
 * start it without touching the machine's shared server. Its log is `logFile`.
 */
export class PrivateNats {
  private process?: Subprocess;
  readonly storeDir = mkdtempSync(join(tmpdir(), "nats-e2e-"));
  readonly logFile = join(this.storeDir, "nats-server.log");
  port = 0;

  constructor(private readonly options: PrivateNatsOptions = {}) {}

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
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
    if (this.options.include) {
      // nats-server resolves an include relative to the including file, even an absolute path.
      const config = join(this.storeDir, "nats.conf");
      writeFileSync(config, `include "${relative(this.storeDir, this.options.include)}"\n`);
      args.push("-c", config);
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

  async stop(): Promise<void> {
    this.process?.kill("SIGTERM");
    await this.process?.exited;
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}

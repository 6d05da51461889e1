import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { freePort } from "./basics";

/**
 * A private `nats-server -js` on a free port with its own store directory, so a test can stop and
 * start it without touching the machine's shared server.
 */
export class PrivateNats {
  private process?: Subprocess;
  readonly storeDir = mkdtempSync(join(tmpdir(), "nats-e2e-"));
  port = 0;

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.port ||= await freePort();
    const binary = Bun.which("nats-server") ?? "/usr/sbin/nats-server";
    this.process = Bun.spawn(
      [binary, "-a", "127.0.0.1", "-p", String(this.port), "-js", "-sd", this.storeDir],
      {
        stdout: "ignore",
        stderr: "ignore",
      },
    );
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
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

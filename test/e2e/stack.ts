import { createLogger } from "@commerce/shared/logger";
import { messageTopology, streamsOf } from "@commerce/shared/messages";
import { NatsLink } from "@commerce/shared/nats";
import { testDatabaseUrl, testNatsUrl, unique } from "@commerce/shared/testing";
import type { Subprocess } from "bun";

const root = new URL("../..", import.meta.url).pathname;
export const jwtSecret = "e2e-secret-that-is-at-least-32-characters";
export const webhookSecret = "whsec_e2e_secret";

/** Set E2E_BINARIES=1 to run the compiled dist/ binaries instead of the sources. */
const useBinaries = process.env.E2E_BINARIES === "1";

export async function freePort(): Promise<number> {
  const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = server.port;
  server.stop(true);
  return port;
}

export type ServiceName = "api" | "payments";

export class ServiceProcess {
  process?: Subprocess;
  readonly url: string;
  output = "";

  constructor(
    readonly name: ServiceName,
    readonly port: number,
    private readonly env: Record<string, string>,
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  async start(): Promise<void> {
    const command = useBinaries
      ? [`${root}dist/${this.name}`]
      : [process.execPath, `${root}services/${this.name}/src/main.ts`];
    this.process = Bun.spawn(command, {
      cwd: root,
      env: { PATH: process.env.PATH ?? "", ...this.env, PORT: String(this.port) },
      stdout: "pipe",
      stderr: "pipe",
    });
    void this.collect(this.process.stdout as ReadableStream<Uint8Array>);
    void this.collect(this.process.stderr as ReadableStream<Uint8Array>);
    await this.waitReady();
  }

  private async collect(stream: ReadableStream<Uint8Array>) {
    const decoder = new TextDecoder();
    for await (const chunk of stream)
      this.output = (this.output + decoder.decode(chunk)).slice(-200_000);
  }

  async waitReady(timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.process?.exitCode !== null && this.process?.exitCode !== undefined)
        throw new Error(`${this.name} exited with ${this.process.exitCode}:\n${this.output}`);
      try {
        if ((await fetch(`${this.url}/ready`)).ok) return;
      } catch {}
      await Bun.sleep(50);
    }
    throw new Error(`${this.name} not ready after ${timeoutMs} ms:\n${this.output}`);
  }

  /** Sends a signal and waits for the exit code. */
  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> {
    if (!this.process || this.process.exitCode !== null) return this.process?.exitCode ?? null;
    this.process.kill(signal);
    return this.process.exited;
  }
}

/**
 * Both services as real processes on free ports, against the real PostgreSQL and NATS, with
 * their own NATS names (NATS_PREFIX) so several stacks and test files never share messages.
 */
export async function startStack({ start = ["api", "payments"] as ServiceName[] } = {}) {
  const prefix = unique("e");
  const env = {
    DATABASE_URL: testDatabaseUrl,
    NATS_URL: testNatsUrl,
    NATS_PREFIX: prefix,
    AUTH_JWT_SECRET: jwtSecret,
    PAYMENT_WEBHOOK_SECRETS: webhookSecret,
    RATE_LIMIT_RPS: "0",
    LOG_LEVEL: "warn",
  };
  const api = new ServiceProcess("api", await freePort(), env);
  const payments = new ServiceProcess("payments", await freePort(), env);
  const services = { api, payments };
  for (const name of start) await services[name].start();
  const topology = messageTopology(prefix);
  const nats = new NatsLink(
    testNatsUrl,
    "e2e",
    createLogger("error", {}, () => {}),
  );
  await nats.start();

  return {
    ...services,
    topology,
    nats,
    async stop() {
      await Promise.all([api.stop(), payments.stop()]);
      const jsm = await nats.manager();
      for (const stream of streamsOf(topology))
        await jsm.streams.delete(stream.name).catch(() => {});
      await nats.close();
    },
  };
}

export type Stack = Awaited<ReturnType<typeof startStack>>;

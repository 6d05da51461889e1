/**
 * The one process launcher of the repository: a service (or the bench's floor and Express) as a
 * child process on its own port, ready once GET /ready answers 200. The tests keep its output in
 * memory to assert on; the bench streams it to files, so a long load never grows this process.
 */
import { bunServiceFlags } from "@commerce/shared/platform/http/request-limits";
import type { Subprocess } from "bun";
import { freePort } from "./basics";

export const root = new URL("../..", import.meta.url).pathname;

export type ServiceName = "api" | "payments";

/** Where a process's output goes: kept in memory (the last 200 kB), or streamed to files. */
export type Output =
  | "memory"
  /** stdout to `<dir>/<name>.log` (or discarded with `stdout: false`), stderr to `<name>.err`. */
  | { dir: string; stdout?: boolean };

export type LaunchOptions = {
  name: string;
  command: string[];
  env: Record<string, string>;
  /** A free port when not given; the process gets it as PORT. */
  port?: number;
  /** The repository's root unless told. */
  cwd?: string;
  output?: Output;
  readyTimeoutMs?: number;
  /** How often /ready is asked: the bench polls often to time exec → ready. */
  readyPollMs?: number;
};

export class ServiceProcess {
  process?: Subprocess;
  readonly name: string;
  readonly port: number;
  readonly url: string;
  /** With `output: "memory"`: what the process wrote on stdout and stderr, the last 200 kB. */
  output = "";
  /** With output to files: where stdout goes (undefined when discarded). */
  readonly log?: string;
  /** Milliseconds from spawn to the first 200 of /ready, of the last start. */
  readyMs = 0;

  constructor(private readonly options: LaunchOptions & { port: number }) {
    this.name = options.name;
    this.port = options.port;
    this.url = `http://127.0.0.1:${options.port}`;
    const output = options.output ?? "memory";
    if (output !== "memory" && output.stdout !== false) this.log = `${output.dir}/${this.name}.log`;
  }

  /** The exit code once the process has exited; null while it runs (or never started). */
  get exitCode(): number | null {
    return this.process?.exitCode ?? null;
  }

  get pid(): number {
    if (!this.process) throw new Error(`${this.name} was never started`);
    return this.process.pid;
  }

  async start(): Promise<void> {
    const { command, env, cwd = root, output = "memory" } = this.options;
    const toFiles = output !== "memory";
    const started = performance.now();
    this.process = Bun.spawn(command, {
      cwd,
      env: { PATH: process.env.PATH ?? "", ...env, PORT: String(this.port) },
      stdout: toFiles ? (this.log ? Bun.file(this.log) : "ignore") : "pipe",
      stderr: toFiles ? Bun.file(`${output.dir}/${this.name}.err`) : "pipe",
    });
    if (!toFiles) {
      void this.collect(this.process.stdout as ReadableStream<Uint8Array>);
      void this.collect(this.process.stderr as ReadableStream<Uint8Array>);
    }
    await this.waitReady(this.options.readyTimeoutMs);
    this.readyMs = performance.now() - started;
  }

  /** The JSON lines the process wrote (O6), in order; output kept in memory only. */
  logLines(): Record<string, any>[] {
    return this.output
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .flatMap((line) => {
        try {
          return [JSON.parse(line)];
        } catch {
          return [];
        }
      });
  }

  private async collect(stream: ReadableStream<Uint8Array>) {
    const decoder = new TextDecoder();
    for await (const chunk of stream)
      this.output = (this.output + decoder.decode(chunk)).slice(-200_000);
  }

  /** What to show when it fails: its output, or where that output is. */
  private whatItSaid(): string {
    const output = this.options.output ?? "memory";
    return output === "memory" ? `:\n${this.output}` : `; see ${output.dir}/${this.name}.err`;
  }

  async waitReady(timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.process?.exitCode !== null && this.process?.exitCode !== undefined)
        throw new Error(`${this.name} exited with ${this.process.exitCode}${this.whatItSaid()}`);
      try {
        if ((await fetch(`${this.url}/ready`)).ok) return;
      } catch {}
      await Bun.sleep(this.options.readyPollMs ?? 50);
    }
    throw new Error(`${this.name} not ready after ${timeoutMs} ms${this.whatItSaid()}`);
  }

  /** Sends a signal and waits for the exit code; SIGKILL after `killAfterMs` if given. */
  async stop(signal: NodeJS.Signals = "SIGTERM", killAfterMs?: number): Promise<number | null> {
    if (!this.process || this.process.exitCode !== null) return this.process?.exitCode ?? null;
    this.process.kill(signal);
    if (killAfterMs === undefined) return this.process.exited;
    const exited = await Promise.race([this.process.exited, Bun.sleep(killAfterMs)]);
    if (typeof exited === "number") return exited;
    this.process.kill("SIGKILL");
    return this.process.exited;
  }
}

/** A process on a free port (unless `port` is given), started and ready. */
export async function launch(options: LaunchOptions): Promise<ServiceProcess> {
  const service = new ServiceProcess({ ...options, port: options.port ?? (await freePort()) });
  await service.start();
  return service;
}

/**
 * How to run a service: from its sources (PROFILE_SERVICE=<name> adds a CPU profile, as markdown,
 * written when it exits), or the compiled binary in dist/.
 */
/** Runs a command to its end and answers its exit code, standard output and standard error. */
export async function runToEnd(
  command: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
) {
  const child = Bun.spawn(command, { ...options, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { out, err, code };
}

export const serviceCommand = (name: ServiceName, binary: boolean): string[] =>
  binary
    ? [`${root}dist/${name}`]
    : [
        process.execPath,
        "--no-env-file",
        ...bunServiceFlags,
        ...(process.env.PROFILE_SERVICE === name
          ? ["--cpu-prof-md", `--cpu-prof-dir=${process.env.PROFILE_DIR ?? "/tmp/prof"}`]
          : []),
        `${root}services/${name}/src/main.ts`,
      ];

/** A process `npm start` runs: its output forwarded line by line behind its name, stopped gently. */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";

export const label = (name: string) => `${name.padEnd(8)} | `;

export class Child {
  private readonly process: ChildProcess;
  readonly exited: Promise<void>;
  exitStatus?: string;

  constructor(
    readonly name: string,
    command: string[],
    options: { cwd: string; env: NodeJS.ProcessEnv },
  ) {
    // Its own process group: the terminal's Ctrl-C reaches only npm start, which chooses the order.
    this.process = spawn(command[0], command.slice(1), {
      ...options,
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
        this.exitStatus = error.message;
        resolve();
      });
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

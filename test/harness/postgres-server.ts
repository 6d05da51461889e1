import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { freePort } from "./basics";

/** PostgreSQL's programs: the newest /usr/lib/postgresql/<version>/bin, else whatever is on PATH. */
function postgresBin(program: string): string {
  const base = "/usr/lib/postgresql";
  const versions = existsSync(base)
    ? readdirSync(base)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const version of versions) {
    const path = join(base, version, "bin", program);
    if (existsSync(path)) return path;
  }
  const found = Bun.which(program);
  if (!found) throw new Error(`${program} not found: install PostgreSQL's server binaries`);
  return found;
}

/**
 * A private PostgreSQL cluster in a temporary directory on a free port, so a fault test can stop
 * and start it without touching the machine's shared server. PostgreSQL refuses to run as root,
 * so as root its programs run as the `postgres` user, who owns the directory.
 */
export class PrivatePostgres {
  readonly dir = mkdtempSync(join(tmpdir(), "pg-faults-"));
  private readonly dataDir = join(this.dir, "data");
  port = 0;

  /**
   * With `password`, connections over TCP must give it (scram-sha-256); else all are trusted.
   * `settings` are more server settings (`-c name=value`), after and over the defaults (fsync off).
   */
  constructor(
    private readonly options: { password?: string; settings?: Record<string, string> } = {},
  ) {}

  get url(): string {
    const password = this.options.password ? `:${encodeURIComponent(this.options.password)}` : "";
    return `postgres://root${password}@127.0.0.1:${this.port}/postgres`;
  }

  private async run(args: string[]): Promise<void> {
    const asPostgres = userInfo().uid === 0 ? ["runuser", "-u", "postgres", "--"] : [];
    const child = Bun.spawn([...asPostgres, ...args], { stdout: "pipe", stderr: "pipe" });
    const [exitCode, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
    if (exitCode !== 0) throw new Error(`${args[0]} failed (${exitCode}): ${stderr}`);
  }

  /** initdb (once), then start on the same port every time, waiting until it accepts connections. */
  async start(): Promise<void> {
    if (!this.port) {
      const passwordFile = join(this.dir, "password");
      if (this.options.password) writeFileSync(passwordFile, this.options.password);
      if (userInfo().uid === 0) {
        const { uid, gid } = postgresIds();
        chownSync(this.dir, uid, gid);
        if (this.options.password) chownSync(passwordFile, uid, gid);
      }
      await this.run([
        postgresBin("initdb"),
        "-D",
        this.dataDir,
        ...(this.options.password
          ? ["--auth-local=trust", "--auth-host=scram-sha-256", `--pwfile=${passwordFile}`]
          : ["-A", "trust"]),
        "-U",
        "root",
        "-E",
        "UTF8",
        "--no-sync",
      ]);
      this.port = await freePort();
    }
    await this.run([
      postgresBin("pg_ctl"),
      "-D",
      this.dataDir,
      "-l",
      join(this.dir, "postgres.log"),
      "-o",
      [
        `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
        ...Object.entries(this.options.settings ?? {}).map(
          ([name, value]) => `-c ${name}=${value}`,
        ),
      ].join(" "),
      "-w",
      "-t",
      "30",
      "start",
    ]);
  }

  /** A fast shutdown: open transactions are rolled back and clients are disconnected. */
  async stop(): Promise<void> {
    await this.run([postgresBin("pg_ctl"), "-D", this.dataDir, "-m", "fast", "-w", "stop"]);
  }

  async dispose(): Promise<void> {
    await this.stop().catch(() => {});
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function postgresIds(): { uid: number; gid: number } {
  const id = (flag: string) => Bun.spawnSync(["id", flag, "postgres"]).stdout.toString().trim();
  const [uid, gid] = [id("-u"), id("-g")];
  if (!/^\d+$/.test(uid) || !/^\d+$/.test(gid))
    throw new Error("running as root needs a postgres user to run PostgreSQL as");
  return { uid: Number(uid), gid: Number(gid) };
}

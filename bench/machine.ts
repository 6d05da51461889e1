/** This machine and its processes: what it is, and the CPU and memory each part of a run used. */
import { readdirSync, readFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import type postgres from "postgres";
import { natsUrl } from "./harness";

export type Machine = ReturnType<typeof machine>;

export function machine() {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  const model = cpuinfo.match(/^model name\s*:\s*(.*)$/m)?.[1] ?? "unknown";
  const version = (command: string[]) =>
    Bun.spawnSync(command).stdout.toString().trim().split("\n")[0] ?? "";
  return {
    cpus: cpus().length,
    cpu_model: model,
    memory_gib: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    kernel: version(["uname", "-r"]),
    bun: Bun.version,
    node: version(["node", "--version"]),
    wrk: version(["wrk", "--version"]).split(" ").slice(0, 2).join(" "),
    load_average_at_start: readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" "),
  };
}

/**
 * /proc/<pid>/status of the service's own process, in MiB: resident, of it anonymous (heap, JIT,
 * buffers) and file-backed (almost all the binary's own pages: Bun and JavaScriptCore), and peak.
 */
export function memory(pid: number): {
  rss_mib: number;
  anon_mib: number;
  file_mib: number;
  peak_mib: number;
} {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+)`, "m"))?.[1]);
  const mib = (field: string) => Math.round(kib(field) / 102.4) / 10;
  return {
    rss_mib: mib("VmRSS"),
    anon_mib: mib("RssAnon"),
    file_mib: mib("RssFile"),
    peak_mib: mib("VmHWM"),
  };
}

/** User + system CPU of a process, in clock ticks (1/100 s). */
export function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** The PostgreSQL server under test: its postmaster and every process it started. */
let postmaster = 0;

/** Finds the PostgreSQL server under test from one of its backends. */
export async function findPostmaster(sql: postgres.Sql): Promise<void> {
  const [{ pid }] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
  postmaster = parentOf(pid);
}

export function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
}

export function postgresTicks(): number {
  let total = cpuTicks(postmaster);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (parentOf(Number(entry)) === postmaster) total += cpuTicks(Number(entry));
    } catch {}
  }
  return total;
}

/** The nats-server of NATS_URL (other ones may run for tests), found by its port. */
function natsServerPids(): number[] {
  const port = new URL(natsUrl.replace(/^nats:/, "http:")).port || "4222";
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() !== "nats-server") continue;
      const args = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const portArg = args.findIndex((a) => a === "-p" || a === "--port");
      if ((portArg >= 0 ? args[portArg + 1] : "4222") === port) pids.push(Number(entry));
    } catch {}
  }
  return pids;
}

export const natsTicks = () => natsServerPids().reduce((n, pid) => n + cpuTicks(pid), 0);

/** Busy CPU of the whole machine, in clock ticks, from /proc/stat. */
export function machineBusyTicks(): number {
  const [, user, nice, system, , , irq, softirq, steal] = readFileSync("/proc/stat", "utf8")
    .split("\n")[0]
    .split(/\s+/)
    .map(Number);
  return user + nice + system + irq + softirq + steal;
}

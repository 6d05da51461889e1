/**
 * Hands memory back once a burst of work is over (docs/benchmarks.md, "Memory"). Between
 * collections JavaScriptCore lets its heap grow to about twice what is live, and nothing collects
 * it once the service goes quiet: after a load the binaries held 85-115 MiB, ~12 MiB of it live.
 *
 * When the process has grown by `growthBytes` and then used under `idleCpuShare` of a core for a
 * whole `intervalMs`, a full collection returns the burst's garbage; it costs the next burst
 * nothing measurable. After `dropCodeAfterMs` of quiet, the compiled code goes too (`Bun.shrink`:
 * bytecode and JIT code, ~12 MiB on the api); the next burst then spends its first seconds
 * compiling again at up to half its throughput, so this waits for a pause far longer than any
 * between bursts of real use. Nothing runs while the process is busy.
 */
export type ReclaimOptions = {
  intervalMs?: number;
  dropCodeAfterMs?: number;
  growthBytes?: number;
  idleCpuShare?: number;
  /** The process's readings and actions; tests replace them. */
  readRss?: () => number;
  readCpuMicros?: () => number;
  collect?: () => void;
  dropCode?: () => void;
};

/** One decision per call of `tick`; `start` calls it every `intervalMs`. */
export function memoryReclaimer({
  intervalMs = 1000,
  dropCodeAfterMs = 60_000,
  growthBytes = 8 * 1024 * 1024,
  idleCpuShare = 0.05,
  readRss = () => process.memoryUsage.rss(),
  readCpuMicros = () => {
    const { user, system } = process.cpuUsage();
    return user + system;
  },
  collect = () => Bun.gc(true),
  dropCode = () => Bun.shrink(),
}: ReclaimOptions = {}) {
  let floor = readRss();
  let cpu = readCpuMicros();
  let quietMs = 0;
  let garbage = false;
  let code = false;

  const tick = () => {
    const rss = readRss();
    const now = readCpuMicros();
    const busy = now - cpu >= intervalMs * 1000 * idleCpuShare;
    cpu = now;
    if (rss - floor >= growthBytes) garbage = code = true;
    floor = Math.min(floor, rss);
    if (busy) {
      quietMs = 0;
      return;
    }
    quietMs += intervalMs;
    if (garbage) {
      garbage = false;
      collect();
      floor = readRss();
    }
    if (code && quietMs >= dropCodeAfterMs) {
      code = false;
      dropCode();
      // The dropped code is garbage itself, and the allocator keeps its pages until collected.
      garbage = true;
    }
    cpu = readCpuMicros();
  };

  return {
    tick,
    start(): () => void {
      const timer = setInterval(tick, intervalMs);
      timer.unref();
      return () => clearInterval(timer);
    },
  };
}

/** What each service's main.ts runs: the reclaimer with its defaults, for the process's life. */
export const reclaimMemoryWhenIdle = () => memoryReclaimer().start();

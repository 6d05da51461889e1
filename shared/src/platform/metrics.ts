import {
  Counter,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  type Metric,
  Registry,
} from "prom-client";
import { HttpStats } from "./http-metrics";

/**
 * The service's Prometheus registry (O3), on prom-client: its defaults add process CPU, resident
 * memory, open files, heap and event-loop lag (prom-client's GC histogram needs a Node API Bun
 * lacks, so it is absent). One registry per service, so several can live in one test process.
 */
/**
 * N4: how long a gauge's reading (a database query, a NATS request) is reused. A flood of scrapes
 * costs at most one round of reads per this period.
 */
export const gaugeCacheMs = 5000;

const heapSpaceGauges = [
  "nodejs_heap_space_size_total_bytes",
  "nodejs_heap_space_size_used_bytes",
  "nodejs_heap_space_size_available_bytes",
];

/**
 * `read` at most once per `ttlMs`: callers within that time share the last result, or the read
 * under way. A failed read is not kept, so the next scrape tries again.
 */
export function cachedRead<T>(read: () => Promise<T> | T, ttlMs = gaugeCacheMs): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    const now = performance.now();
    if (last && now - last.at < ttlMs) return last.value;
    const value = Promise.resolve().then(read);
    const entry = { at: now, value };
    last = entry;
    value.catch(() => {
      if (last === entry) last = undefined;
    });
    return value;
  };
}

export class Metrics {
  private readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  /** O3: the HTTP request counter and latency histogram, handed to prom-client when scraped. */
  readonly http = new HttpStats();

  /** Each gauge's cached read (labelled ones summed), for the operator status routes (U3). */
  private readonly reads = new Map<string, () => Promise<number>>();

  constructor() {
    // Issue 38: prom-client samples the event loop's delay every 10 ms by default, a timer that
    // alone kept an idle service at ~0.011 cores (most of its idle floor). Every 100 ms still
    // sees any stall longer than that; the lag gauges mean the same.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 100 });
    // N4: the per-heap-space gauges ask the runtime for heap space statistics on every scrape,
    // about 4 ms of the event loop under Bun, most of a scrape's cost; the heap totals stay.
    for (const name of heapSpaceGauges) this.registry.removeSingleMetric(name);
    for (const metric of this.http.metrics()) this.registry.registerMetric(metric);
  }

  /**
   * The gauge's value as a scrape would show it, from the same 5 s cache (N4), so a status route
   * costs no more than a scrape; a labelled gauge's series summed. Null when the gauge is not
   * registered or its read failed.
   */
  async reading(name: string): Promise<number | null> {
    const read = this.reads.get(name);
    if (!read) return null;
    try {
      const value = await read();
      return Number.isFinite(value) ? value : null;
    } catch {
      return null;
    }
  }

  /** The metric already registered under `name`: apps rebuilt on the same registry share it. */
  private existing<M extends Metric>(name: string): M | undefined {
    return this.registry.getSingleMetric(name) as M | undefined;
  }

  counter<L extends string>(name: string, help: string, labelNames: L[] = []): Counter<L> {
    return (
      this.existing<Counter<L>>(name) ??
      new Counter({ name, help, labelNames, registers: [this.registry] })
    );
  }

  histogram<L extends string>(name: string, help: string, labelNames: L[] = []): Histogram<L> {
    return (
      this.existing<Histogram<L>>(name) ??
      new Histogram({
        name,
        help,
        labelNames,
        buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
        registers: [this.registry],
      })
    );
  }

  /**
   * A gauge read when scraped, e.g. the outbox backlog; NaN when the read fails. The reading is
   * reused for 5 s (N4).
   */
  gauge(name: string, help: string, readNow: () => Promise<number> | number): Gauge {
    const read = cachedRead(readNow);
    if (!this.reads.has(name)) this.reads.set(name, read);
    return (
      this.existing<Gauge>(name) ??
      new Gauge({
        name,
        help,
        registers: [this.registry],
        async collect() {
          try {
            this.set(await read());
          } catch {
            this.set(Number.NaN);
          }
        },
      })
    );
  }

  /**
   * A gauge with labels, every series read when scraped (e.g. open reviews by reason); the
   * reading is reused for 5 s (N4).
   */
  labelledGauge<L extends string>(
    name: string,
    help: string,
    labelNames: L[],
    readNow: () => Promise<Array<{ labels: Record<L, string>; value: number }>>,
  ): Gauge<L> {
    const read = cachedRead(readNow);
    if (!this.reads.has(name))
      this.reads.set(name, async () =>
        (await read()).reduce((sum, series) => sum + series.value, 0),
      );
    return (
      this.existing<Gauge<L>>(name) ??
      new Gauge({
        name,
        help,
        labelNames,
        registers: [this.registry],
        async collect() {
          this.reset();
          try {
            for (const { labels, value } of await read()) this.set(labels, value);
          } catch {
            // A failed read leaves the gauge empty rather than showing stale series.
          }
        },
      })
    );
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}

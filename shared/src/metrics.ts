import {
  Counter,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  type Metric,
  Registry,
} from "prom-client";

/**
 * The service's Prometheus registry (O3), on prom-client: its defaults add process CPU, resident
 * memory, open files, heap and event-loop lag (prom-client's GC histogram needs a Node API Bun
 * lacks, so it is absent). One registry per service, so several can live in one test process.
 */
export class Metrics {
  private readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  readonly httpRequests = this.counter(
    "http_requests_total",
    "HTTP requests by method, route and status",
    ["method", "route", "status"],
  );
  readonly httpDuration = this.histogram(
    "http_request_duration_seconds",
    "HTTP request latency by method, route and status",
    ["method", "route", "status"],
  );

  constructor() {
    collectDefaultMetrics({ register: this.registry });
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

  /** A gauge read when scraped, e.g. the outbox backlog; NaN when the read fails. */
  gauge(name: string, help: string, read: () => Promise<number> | number): Gauge {
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

  /** A gauge with labels, every series read when scraped (e.g. open reviews by reason). */
  labelledGauge<L extends string>(
    name: string,
    help: string,
    labelNames: L[],
    read: () => Promise<Array<{ labels: Record<L, string>; value: number }>>,
  ): Gauge<L> {
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

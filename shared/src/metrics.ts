type Labels = Record<string, string>;

const labelKey = (labels: Labels) =>
  Object.entries(labels)
    .map(
      ([k, v]) =>
        `${k}="${v.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n")}"`,
    )
    .join(",");

interface Metric {
  render(): string;
}

export class Counter implements Metric {
  private values = new Map<string, number>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  inc(labels: Labels = {}, by = 1): void {
    const key = labelKey(labels);
    this.values.set(key, (this.values.get(key) ?? 0) + by);
  }

  get(labels: Labels = {}): number {
    return this.values.get(labelKey(labels)) ?? 0;
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const [key, value] of this.values)
      lines.push(`${this.name}${key ? `{${key}}` : ""} ${value}`);
    return lines.join("\n");
  }
}

/** A gauge whose value is read when scraped, e.g. outbox backlog or consumer lag. */
export class Gauge implements Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    private read: () => Promise<number> | number,
  ) {}

  private last = 0;

  async refresh(): Promise<void> {
    try {
      this.last = await this.read();
    } catch {
      this.last = Number.NaN;
    }
  }

  render(): string {
    return `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} gauge\n${this.name} ${this.last}`;
  }
}

const defaultBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Histogram implements Metric {
  private series = new Map<string, { counts: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: number[] = defaultBuckets,
  ) {}

  observe(labels: Labels, value: number): void {
    const key = labelKey(labels);
    let s = this.series.get(key);
    if (!s) {
      s = { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]) s.counts[i]++;
    s.sum += value;
    s.count++;
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const [key, s] of this.series) {
      const sep = key ? "," : "";
      this.buckets.forEach((le, i) => {
        lines.push(`${this.name}_bucket{${key}${sep}le="${le}"} ${s.counts[i]}`);
      });
      lines.push(`${this.name}_bucket{${key}${sep}le="+Inf"} ${s.count}`);
      lines.push(`${this.name}_sum${key ? `{${key}}` : ""} ${s.sum}`);
      lines.push(`${this.name}_count${key ? `{${key}}` : ""} ${s.count}`);
    }
    return lines.join("\n");
  }
}

/** A tiny Prometheus registry: enough for counters, gauges and latency histograms (O3). */
export class Metrics {
  private metrics: Metric[] = [];
  readonly httpRequests = this.counter(
    "http_requests_total",
    "HTTP requests by method, route and status",
  );
  readonly httpDuration = this.histogram(
    "http_request_duration_seconds",
    "HTTP request latency by method, route and status",
  );

  counter(name: string, help: string): Counter {
    return this.add(new Counter(name, help));
  }

  histogram(name: string, help: string, buckets?: number[]): Histogram {
    return this.add(new Histogram(name, help, buckets));
  }

  gauge(name: string, help: string, read: () => Promise<number> | number): Gauge {
    return this.add(new Gauge(name, help, read));
  }

  private add<M extends Metric>(metric: M): M {
    this.metrics.push(metric);
    return metric;
  }

  async render(): Promise<string> {
    await Promise.all(this.metrics.map((m) => (m instanceof Gauge ? m.refresh() : undefined)));
    return `${this.metrics.map((m) => m.render()).join("\n")}\n`;
  }
}

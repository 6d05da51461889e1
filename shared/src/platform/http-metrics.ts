import type { Metric } from "prom-client";

/**
 * O3, N4: upper bounds (seconds) of `http_request_duration_seconds`: 2.5 ms to 10 s, eleven of
 * them; a request's latency on this stack is a few ms, so finer steps below 2.5 ms say little.
 */
export const httpDurationBuckets = [0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

/** A sample as prom-client's registry prints it (`metricName` for a histogram's parts). */
type Sample = { metricName?: string; labels: Record<string, string | number>; value: number };
/** What prom-client's registry asks of a metric when scraped. */
type Exported = { name: string; help: string; type: "counter" | "histogram"; aggregator: "sum" };

type Counted = { method: string; route: string; status: string; n: number };
type Timed = { method: string; route: string; buckets: number[]; sum: number; count: number };

/**
 * O3: `http_requests_total` by method, route and status and `http_request_duration_seconds` by
 * method and route, counted per request in plain maps (a key string and a few additions) and
 * handed to prom-client only when scraped. prom-client's own `inc`/`observe` hash the labels on
 * every request, and a histogram per status multiplied its series by the statuses seen: the
 * scrape's size and cost grew with them (N4). Routes are Elysia's templates (or `unmatched`),
 * so the label sets are bounded by the routes and the statuses they answer.
 */
export class HttpStats {
  private readonly counted = new Map<string, Counted>();
  private readonly timed = new Map<string, Timed>();

  record(method: string, route: string, status: number, seconds: number) {
    const key = `${method} ${route}`;
    const countKey = `${key} ${status}`;
    const count = this.counted.get(countKey);
    if (count) count.n++;
    else this.counted.set(countKey, { method, route, status: String(status), n: 1 });
    let time = this.timed.get(key);
    if (!time) {
      time = { method, route, buckets: httpDurationBuckets.map(() => 0), sum: 0, count: 0 };
      this.timed.set(key, time);
    }
    time.sum += seconds;
    time.count++;
    const bucket = httpDurationBuckets.findIndex((bound) => seconds <= bound);
    if (bucket >= 0) time.buckets[bucket]++;
  }

  /** The two metrics, for a prom-client registry's `registerMetric`. */
  metrics(): Metric[] {
    const requests: Exported = {
      name: "http_requests_total",
      help: "HTTP requests by method, route and status",
      type: "counter",
      aggregator: "sum",
    };
    const duration: Exported = {
      name: "http_request_duration_seconds",
      help: "HTTP request latency by method and route",
      type: "histogram",
      aggregator: "sum",
    };
    const counter = {
      ...requests,
      get: async (): Promise<Exported & { values: Sample[] }> => ({
        ...requests,
        values: [...this.counted.values()].map(({ method, route, status, n }) => ({
          labels: { method, route, status },
          value: n,
        })),
      }),
    };
    const histogram = {
      ...duration,
      get: async (): Promise<Exported & { values: Sample[] }> => ({
        ...duration,
        values: [...this.timed.values()].flatMap((t) => this.series(t)),
      }),
    };
    return [counter, histogram] as unknown as Metric[];
  }

  private series({ method, route, buckets, sum, count }: Timed): Sample[] {
    let below = 0;
    const values = httpDurationBuckets.map((le, i) => {
      below += buckets[i];
      return {
        metricName: "http_request_duration_seconds_bucket",
        labels: { method, route, le },
        value: below,
      };
    });
    return [
      ...values,
      {
        metricName: "http_request_duration_seconds_bucket",
        labels: { method, route, le: "+Inf" },
        value: count,
      },
      { metricName: "http_request_duration_seconds_sum", labels: { method, route }, value: sum },
      {
        metricName: "http_request_duration_seconds_count",
        labels: { method, route },
        value: count,
      },
    ];
  }
}

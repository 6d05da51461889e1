import type { Sql } from "@commerce/shared/platform/database";
import type { Metrics } from "@commerce/shared/platform/metrics";
import { failingNowRule } from "./failing-now";

type Backlog = { endpoint_id: string; pending: number; oldest_seconds: number };

/**
 * H8: attempts by outcome and their duration, counted as they happen; pending deliveries and the
 * age of the oldest per endpoint, read by one query every `refreshMs` and served from that copy,
 * so a scrape never queries the database.
 */
export class WebhookMetrics {
  private backlog: Backlog[] = [];
  private timer?: Timer;
  private readonly attempts;
  private readonly duration;
  private readonly wakes;

  constructor(
    metrics: Metrics,
    private readonly sql: Sql,
    private readonly refreshMs = 10_000,
  ) {
    this.attempts = metrics.counter(
      "webhook_attempts_total",
      "Webhook delivery attempts by outcome: succeeded, retrying, failed (no attempt left), unrecorded",
      ["outcome"],
    );
    this.duration = metrics.histogram(
      "webhook_attempt_duration_seconds",
      "Duration of webhook delivery attempts by outcome",
      ["outcome"],
    );
    this.wakes = metrics.counter(
      "webhook_dispatcher_wakes_total",
      "Webhook dispatcher wake-ups by source: commit (this process committed order events), notify (a NOTIFY of committed deliveries, from any replica, H10), poll",
      ["source"],
    );
    metrics.labelledGauge(
      "webhook_deliveries_pending",
      "Webhook deliveries not yet succeeded or failed, per endpoint",
      ["endpoint_id"],
      async () =>
        this.backlog.map((b) => ({ labels: { endpoint_id: b.endpoint_id }, value: b.pending })),
    );
    metrics.labelledGauge(
      "webhook_oldest_pending_seconds",
      "Age of the oldest pending webhook delivery, per endpoint",
      ["endpoint_id"],
      async () =>
        this.backlog.map((b) => ({
          labels: { endpoint_id: b.endpoint_id },
          value: b.oldest_seconds,
        })),
    );
    // U3: endpoints the api disabled itself (H3: failing, or gone), counted as the health line shows them.
    metrics.gauge(
      "webhook_endpoints_disabled_by_api",
      "Webhook endpoints the api disabled because deliveries kept failing or the receiver is gone",
      async () => {
        const [row] = await this.sql<{ failing: number }[]>`
          select count(*)::int as failing from api.webhook_endpoints
          where status = 'disabled' and disabled_reason is distinct from 'manual'`;
        return row.failing;
      },
    );
    // U7: the health line's webhook figures, read together (one statement per 5-second reading).
    const health = () =>
      this.sql<{ failing_now: number; disabled: number; pending: number; oldest: number }[]>`
        select
          count(*) filter (where ${this.sql.unsafe(failingNowRule)})::int as failing_now,
          count(*) filter (where e.status = 'disabled')::int as disabled,
          coalesce(sum(p.pending) filter (where e.status = 'enabled'), 0)::int as pending,
          coalesce(extract(epoch from now() - min(p.oldest) filter (where e.status = 'enabled')),
            0)::float8 as oldest
        from api.webhook_endpoints e left join lateral (
          select count(*) as pending, min(d.created_at) as oldest
          from api.webhook_deliveries d where d.endpoint_id = e.id and d.status = 'pending'
        ) p on true`.then(([row]) => row);
    metrics.gauge(
      "webhook_endpoints_failing_now",
      "Enabled webhook endpoints failing now: last attempt failed, or a delivery pending over 5 minutes",
      async () => (await health()).failing_now,
    );
    metrics.gauge(
      "webhook_endpoints_disabled",
      "Webhook endpoints disabled, by an admin or by the api",
      async () => (await health()).disabled,
    );
    metrics.gauge(
      "webhook_deliveries_pending_enabled",
      "Pending webhook deliveries of enabled endpoints",
      async () => (await health()).pending,
    );
    metrics.gauge(
      "webhook_oldest_pending_delivery_seconds",
      "Age of the oldest pending delivery of an enabled endpoint (0: none)",
      async () => (await health()).oldest,
    );
  }

  attempted(outcome: string, seconds: number) {
    this.attempts.inc({ outcome });
    this.duration.observe({ outcome }, seconds);
  }

  /** H10: what woke the dispatcher to look for due deliveries. */
  woken(source: "commit" | "notify" | "poll") {
    this.wakes.inc({ source });
  }

  start() {
    this.timer = setInterval(() => this.refresh().catch(() => {}), this.refreshMs);
    this.refresh().catch(() => {});
  }

  stop() {
    clearInterval(this.timer);
  }

  async refresh() {
    this.backlog = await this.sql<Backlog[]>`
      select endpoint_id::text, count(*)::int as pending,
        extract(epoch from now() - min(created_at))::float8 as oldest_seconds
      from api.webhook_deliveries where status = 'pending' group by endpoint_id`;
  }
}

import type { Sql } from "@commerce/shared/platform/database";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import type { WebhookConfig } from "../../config";
import { recordAttempt } from "./attempt-record";
import type { WebhookMetrics } from "./metrics";
import { sendDelivery } from "./sender";
import { signDelivery } from "./signature";

/** How long past the attempt's timeout a lease lasts: time to record the attempt. */
const leaseMarginSeconds = 5;

/** A delivery this process holds the lease of, with what it needs to sign and send it. */
type Claimed = {
  id: number;
  endpoint_id: number;
  event_type: string;
  message_id: string;
  payload: unknown;
  attempts: number;
  created_at: string;
  /** The lease as PostgreSQL wrote it (microseconds), so only its holder records the attempt. */
  lease: string;
  url: string;
  secret: string;
  previous_secret: string | null;
};

export type DispatcherOptions = {
  /** Attempts in flight per endpoint, over all replicas (as far as their leases show). */
  perEndpoint?: number;
  /** Attempts in flight in this process. */
  inFlight?: number;
  /** How often due deliveries are looked for when nothing kicks the dispatcher. */
  pollMs?: number;
  /** The least time between two claims: attempts finishing one by one share a claim. */
  claimSpacingMs?: number;
};

/**
 * H3, H5, H6: claims due deliveries, signs and sends them, records each attempt. A claim is a
 * lease: `leased_until` set in a short transaction under `FOR UPDATE SKIP LOCKED`, so replicas
 * take different rows and no row is sent by two at once; a process killed mid-attempt leaves a
 * lease that expires, and the delivery is attempted again with the same `webhook-id`. A
 * delivery waits while an earlier one of the same order to the same endpoint is pending (H5);
 * each endpoint has its own bounded number of attempts in flight, so a slow one delays no other.
 */
export class WebhookDispatcher {
  private readonly perEndpoint: number;
  private readonly capacity: number;
  private readonly pollMs: number;
  private readonly claimSpacingMs: number;
  private lastClaim = 0;
  private spaced?: Timer;
  private readonly inFlight = new Set<Promise<void>>();
  private timer?: Timer;
  private running = false;
  private again = false;
  private stopped = true;

  constructor(
    private readonly deps: {
      sql: Sql;
      config: WebhookConfig;
      logger: Logger;
      metrics: WebhookMetrics;
    },
    options: DispatcherOptions = {},
  ) {
    this.perEndpoint = options.perEndpoint ?? 8;
    this.capacity = options.inFlight ?? 64;
    this.pollMs = options.pollMs ?? 1000;
    this.claimSpacingMs = options.claimSpacingMs ?? 50;
  }

  start() {
    this.stopped = false;
    this.timer = setInterval(() => this.kick(), this.pollMs);
    this.kick();
  }

  /** Looks for due deliveries now, e.g. after a transaction wrote some. */
  kick() {
    if (this.stopped || this.spaced) return;
    if (this.running) {
      this.again = true;
      return;
    }
    // The claim reads every pending delivery: under load, one claim per spacing, not per attempt.
    const wait = this.lastClaim + this.claimSpacingMs - performance.now();
    if (wait > 0) {
      this.spaced = setTimeout(() => {
        this.spaced = undefined;
        this.kick();
      }, wait);
      return;
    }
    this.lastClaim = performance.now();
    this.running = true;
    this.claimAndSend()
      .catch((error) => this.deps.logger.warn("webhook claim failed", describeError(error)))
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /**
   * O7: no new claims; attempts in flight get up to `graceMs` to finish. One still waiting on a
   * slow receiver is left to its lease, which expires and sends it again (same webhook-id), so
   * the process still exits within its 10 s.
   */
  async stop(graceMs = 5000) {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.spaced);
    let timer: Timer | undefined;
    await Promise.race([
      Promise.allSettled([...this.inFlight]),
      new Promise((resolve) => {
        timer = setTimeout(resolve, graceMs);
      }),
    ]);
    clearTimeout(timer);
  }

  private async claimAndSend() {
    const room = this.capacity - this.inFlight.size;
    if (room <= 0) return;
    const claimed = await this.claim(room);
    for (const delivery of claimed) {
      const attempt = this.attempt(delivery).finally(() => {
        this.inFlight.delete(attempt);
        this.kick();
      });
      this.inFlight.add(attempt);
    }
  }

  /**
   * One statement: the due deliveries of enabled endpoints that no earlier pending delivery of
   * the same order waits before (H5), at most `perEndpoint` in flight per endpoint, leased for
   * the attempt's timeout and a margin. `skip locked` and the lease re-checked on the locked row
   * make two replicas claiming at once take different rows (H6).
   */
  private async claim(limit: number): Promise<Claimed[]> {
    const { sql, config } = this.deps;
    const leaseSeconds = config.timeoutSeconds + leaseMarginSeconds;
    return sql<Claimed[]>`
      with queue_head as (
        -- H5: only the first pending delivery of each order (per endpoint) may be attempted.
        -- One ordered pass over the pending rows, whatever the table's statistics say.
        select distinct on (endpoint_id, order_id) id, endpoint_id, next_attempt_at, leased_until
        from api.webhook_deliveries
        where status = 'pending'
        order by endpoint_id, order_id, id
      ), in_flight as (
        select endpoint_id, count(*)::int as n from queue_head
        where leased_until > now()
        group by endpoint_id
      ), candidate as (
        select h.id, h.endpoint_id,
          row_number() over (partition by h.endpoint_id order by h.next_attempt_at, h.id) as rank
        from queue_head h
        join api.webhook_endpoints e on e.id = h.endpoint_id and e.status = 'enabled'
        where h.next_attempt_at <= now()
          and (h.leased_until is null or h.leased_until <= now())
      ), chosen as (
        select c.id from candidate c left join in_flight f using (endpoint_id)
        where c.rank <= ${this.perEndpoint} - coalesce(f.n, 0)
        order by c.rank, c.id
        limit ${limit}
      ), locked as (
        select id from api.webhook_deliveries
        where id in (select id from chosen) and status = 'pending'
          and (leased_until is null or leased_until <= now())
        for update skip locked
      )
      update api.webhook_deliveries d
      set leased_until = now() + make_interval(secs => ${leaseSeconds})
      from locked, api.webhook_endpoints e
      where d.id = locked.id and e.id = d.endpoint_id
      returning d.id, d.endpoint_id, d.event_type, d.message_id, d.payload, d.attempts,
        to_char(d.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
        d.leased_until::text as lease, e.url, e.secret,
        case when e.previous_secret_until > now() then e.previous_secret end as previous_secret`;
  }

  private async attempt(delivery: Claimed) {
    const { config, metrics, logger } = this.deps;
    const timestamp = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({
      type: delivery.event_type,
      timestamp: delivery.created_at,
      data: delivery.payload,
    });
    const secrets = [delivery.secret, delivery.previous_secret].filter((s) => s !== null);
    const headers = {
      "webhook-id": delivery.message_id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signDelivery(secrets, delivery.message_id, timestamp, body),
    };
    const result = await sendDelivery(
      delivery.url,
      headers,
      body,
      config.timeoutSeconds * 1000,
      config,
    );
    const outcome = await recordAttempt(this.deps.sql, config, delivery, result).catch((error) => {
      // The lease expires and the attempt is made again: at least once, never lost (H6).
      logger.warn("webhook attempt not recorded", {
        delivery_id: delivery.id,
        ...describeError(error),
      });
      return "unrecorded";
    });
    metrics.attempted(outcome, result.durationMs / 1000);
    logger.info("webhook attempt", {
      delivery_id: delivery.id,
      endpoint_id: delivery.endpoint_id,
      webhook_id: delivery.message_id,
      status_code: result.statusCode,
      error: result.error,
      duration_ms: result.durationMs,
      outcome,
    });
  }
}

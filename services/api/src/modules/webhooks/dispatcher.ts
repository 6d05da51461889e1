import type { Sql } from "@commerce/shared/platform/database";
import { FallbackPoll } from "@commerce/shared/platform/fallback-poll";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import type { WebhookConfig } from "../../config";
import { AttemptRecorder } from "./attempt-record";
import type { WebhookMetrics } from "./metrics";
import { sendDelivery } from "./sender";
import { signedDelivery } from "./signature";
import { DispatcherWake } from "./wake";

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
  /** The least time between claims after one that found nothing (no endpoint, nothing due). */
  idleClaimSpacingMs?: number;
  /** Due deliveries a claim reads per endpoint: a bound on its cost, whatever the backlog. */
  scanPerEndpoint?: number;
};

/**
 * H3, H5, H6: claims due deliveries, signs and sends them, records each attempt. A claim is a
 * lease: `leased_until` set in a short transaction under `FOR UPDATE SKIP LOCKED`, so replicas
 * take different rows and no row is sent by two at once; a process killed mid-attempt leaves a
 * lease that expires, and the delivery is attempted again with the same `webhook-id`. A
 * delivery waits while an earlier one of the same order to the same endpoint is pending (H5);
 * each endpoint has its own bounded number of attempts in flight, so a slow one delays no other.
 * Attempts are recorded in batches (`AttemptRecorder`): a round of attempts, one statement.
 */
export class WebhookDispatcher {
  private readonly perEndpoint: number;
  private readonly capacity: number;
  private readonly pollMs: number;
  private readonly claimSpacingMs: number;
  private readonly idleClaimSpacingMs: number;
  /** Whether the last claim took anything: deliveries are flowing. */
  private flowing = false;
  private readonly scanPerEndpoint: number;
  private readonly recorder: AttemptRecorder;
  /** H10: a NOTIFY of deliveries committed by any replica. */
  private readonly notified: DispatcherWake;
  private lastClaim = Number.NEGATIVE_INFINITY;
  private spaced?: Timer;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly poll: FallbackPoll;
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
    // H10: an endpoint's throughput is at most `perEndpoint` attempts per round (claim, send,
    // record), and on a loaded machine a claim alone took 100-230 ms: 8 capped a healthy
    // receiver near 40-160 a second, and at 250 paid orders a second deliveries queued for
    // seconds. 64 keeps up through such rounds; the process's capacity grows with it (8 slow
    // endpoints to fill it, as before), so a slow endpoint still delays no other (H5).
    this.perEndpoint = options.perEndpoint ?? 64;
    this.capacity = options.inFlight ?? 512;
    this.pollMs = options.pollMs ?? 1000;
    // Issue 38: the poll is a fallback (a commit and a NOTIFY wake it; its own retries wake it at
    // their time): idle, it waits up to 8 polls' time.
    this.poll = new FallbackPoll(() => this.wake("poll"), this.pollMs, 8 * this.pollMs);
    this.claimSpacingMs = options.claimSpacingMs ?? 10;
    // Every commit of order events wakes the dispatcher; with no endpoint to deliver to (a burst
    // of payments in a shop without webhooks) a claim 100 times a second would be pure load.
    this.idleClaimSpacingMs = options.idleClaimSpacingMs ?? 50;
    this.scanPerEndpoint = options.scanPerEndpoint ?? 2 * this.perEndpoint;
    this.recorder = new AttemptRecorder(deps.sql, deps.config);
    this.notified = new DispatcherWake({
      sql: deps.sql,
      logger: deps.logger,
      onWake: () => this.wake("notify"),
    });
  }

  start() {
    this.stopped = false;
    this.poll.start();
    this.notified.start();
    this.kick();
  }

  /** H10: `kick`, counted by what woke it (a commit here, a NOTIFY from any replica, the poll). */
  wake(source: "commit" | "notify" | "poll") {
    this.deps.metrics.woken(source);
    this.kick();
  }

  /** Looks for due deliveries now, e.g. after a transaction wrote some. */
  kick() {
    if (this.stopped || this.spaced) return;
    if (this.running) {
      this.again = true;
      return;
    }
    // Under load, attempts and order moves that end close together share one claim.
    const spacing = this.flowing ? this.claimSpacingMs : this.idleClaimSpacingMs;
    const wait = this.lastClaim + spacing - performance.now();
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
    this.poll.stop();
    // Forgotten, not only cleared: `kick` waits while `spaced` is set, so a dispatcher started
    // again after a stop that cut a spaced claim short would never claim again. Started again, it
    // claims at once.
    clearTimeout(this.spaced);
    this.spaced = undefined;
    this.lastClaim = Number.NEGATIVE_INFINITY;
    await this.notified.stop();
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
    this.flowing = claimed.length > 0;
    if (this.flowing) this.poll.busy();
    for (const delivery of claimed) {
      // X2 (v5): an attempt that fails outside what `attempt` records (say its log line) is left
      // to its lease like one whose record was lost: logged here, never an unhandled rejection.
      const attempt = this.attempt(delivery)
        .catch((error) =>
          this.deps.logger.warn("webhook attempt failed", {
            delivery_id: delivery.id,
            ...describeError(error),
          }),
        )
        .finally(() => {
          this.inFlight.delete(attempt);
          this.kick();
        });
      this.inFlight.add(attempt);
    }
  }

  /**
   * One statement, whose cost depends on the number of enabled endpoints, not on the backlog:
   * for each enabled endpoint with a free slot (at most `perEndpoint` unexpired leases), its first
   * `scanPerEndpoint` due deliveries in index order. One whose order has an earlier pending
   * delivery at that endpoint (H5) is not due until that one's next attempt (or the end of its
   * lease): its `next_attempt_at` is moved there, so later claims do not read it again, and the
   * attempt record makes it due at once when the earlier one is done. The others are leased for
   * the attempt's timeout and a margin; `next_attempt_at` moves to the lease's end too, so a
   * delivery in flight is not read again either, and is due again only if its lease runs out.
   * `skip locked` and the due and lease checks repeated on the locked row make two replicas
   * claiming at once take different rows (H6).
   */
  async claim(limit: number): Promise<Claimed[]> {
    const { sql, config } = this.deps;
    const leaseSeconds = config.timeoutSeconds + leaseMarginSeconds;
    return sql<Claimed[]>`
      with endpoint as materialized (
        select e.id, ${this.perEndpoint}::int - (
          select count(*)::int from api.webhook_deliveries l
          where l.endpoint_id = e.id and l.status = 'pending' and l.leased_until > now()
        ) as room
        from api.webhook_endpoints e
        where e.status = 'enabled'
      ), due as (
        select d.*, e.room from endpoint e cross join lateral (
          select d.id, d.endpoint_id, d.order_id, d.next_attempt_at, d.leased_until
          from api.webhook_deliveries d
          where d.endpoint_id = e.id and d.status = 'pending' and d.next_attempt_at <= now()
          order by d.next_attempt_at, d.id
          limit ${this.scanPerEndpoint}::int
        ) d
        where e.room > 0
      ), judged as (
        -- H5: the earliest pending delivery of the same order before it, if there is one.
        select due.*, ahead.next_attempt_at as ahead_until
        from due left join lateral (
          select a.next_attempt_at from api.webhook_deliveries a
          where a.endpoint_id = due.endpoint_id and a.status = 'pending'
            and coalesce(a.order_id, 0) = coalesce(due.order_id, 0) and a.id < due.id
          order by a.id
          limit 1
        ) ahead on true
      ), waiting as (
        -- Unchanged since it was read: a record that made it due meanwhile wins.
        select d.id, j.ahead_until from judged j cross join lateral (
          select d.id from api.webhook_deliveries d
          where d.id = j.id and d.next_attempt_at = j.next_attempt_at
          for update skip locked
        ) d
        where j.ahead_until is not null
      ), deferred as (
        -- Not before the earlier one is attempted again; a lease's length at least, as the
        -- earlier one may be claimed in this very statement.
        update api.webhook_deliveries d
        set next_attempt_at = greatest(
          (select w.ahead_until from waiting w where w.id = d.id),
          now() + make_interval(secs => ${leaseSeconds}))
        where d.id = any(array(select id from waiting))
      ), chosen as (
        select id from (
          select j.id, j.room,
            row_number() over (partition by j.endpoint_id order by j.next_attempt_at, j.id) as rank
          from judged j
          where j.ahead_until is null and (j.leased_until is null or j.leased_until <= now())
        ) c
        where c.rank <= c.room
        order by c.rank, c.id
        limit ${limit}::int
      ), locked as (
        -- Row by row by primary key (a lateral probe, whatever the statistics), and without
        -- "status = 'pending'", which would let a planner whose statistics predate the backlog
        -- scan a partial index whole for each id instead.
        select d.id from chosen c cross join lateral (
          select d.id from api.webhook_deliveries d
          where d.id = c.id and d.status not in ('succeeded', 'failed')
            and d.next_attempt_at <= now() and (d.leased_until is null or d.leased_until <= now())
          for update skip locked
        ) d
      )
      update api.webhook_deliveries d
      set leased_until = now() + make_interval(secs => ${leaseSeconds}),
        next_attempt_at = now() + make_interval(secs => ${leaseSeconds})
      from api.webhook_endpoints e
      where d.id = any(array(select id from locked)) and e.id = d.endpoint_id
      returning d.id, d.endpoint_id, d.event_type, d.message_id, d.payload, d.attempts,
        to_char(d.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
        d.leased_until::text as lease, e.url, e.secret,
        case when e.previous_secret_until > now() then e.previous_secret end as previous_secret`;
  }

  private async attempt(delivery: Claimed) {
    const { config, metrics, logger } = this.deps;
    const secrets = [delivery.secret, delivery.previous_secret].filter((s) => s !== null);
    const { body, headers } = signedDelivery(delivery, secrets);
    const result = await sendDelivery(
      delivery.url,
      headers,
      body,
      config.timeoutSeconds * 1000,
      config,
    );
    const outcome = await this.recorder.record(delivery, result).catch((error) => {
      // The lease expires and the attempt is made again: at least once, never lost (H6).
      logger.warn("webhook attempt not recorded", {
        delivery_id: delivery.id,
        ...describeError(error),
      });
      return "unrecorded";
    });
    metrics.attempted(outcome, result.durationMs / 1000);
    // H3: this process's own retry is claimed when it is due, however long the idle poll waits.
    if (outcome === "retrying") this.poll.wakeIn(config.retrySchedule[delivery.attempts] * 1000);
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

import type { Sql } from "@commerce/shared/platform/database";
import { GroupCommitQueue } from "@commerce/shared/platform/group-commit";
import type { WebhookConfig } from "../../config";
import type { AttemptResult } from "./sender";

/** What an attempt came to: `retrying` keeps the delivery pending for the schedule's next delay. */
export type AttemptOutcome = "succeeded" | "retrying" | "failed";

/** The leased delivery an attempt was made for: `lease` is its `leased_until` as PostgreSQL wrote it. */
export type LeasedDelivery = { id: number; endpoint_id: number; attempts: number; lease: string };

type Attempt = { delivery: LeasedDelivery; result: AttemptResult; outcome: AttemptOutcome };

/** H3: the outcome of one more attempt of `delivery`, from its answer and the retry schedule. */
export function outcomeOf(
  config: WebhookConfig,
  delivery: LeasedDelivery,
  result: AttemptResult,
): AttemptOutcome {
  const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
  if (ok) return "succeeded";
  return config.retrySchedule[delivery.attempts] === undefined ? "failed" : "retrying";
}

/**
 * H3, H4, H5: attempts on the log and their consequences, in one statement for the whole batch:
 * each attempt's row; its delivery succeeded, retried after the schedule's next delay, or failed
 * after its last (changed only while this process still holds the lease it claimed); the next
 * delivery of an order whose delivery is done made due at once (H5: it was not due while it
 * waited); and per endpoint, a 410 disables it (`gone`), a success ends its failing streak, and
 * failing for longer than WEBHOOK_DISABLE_AFTER_SECONDS with no success disables it (`failing`).
 */
export async function recordAttempts(sql: Sql, config: WebhookConfig, attempts: Attempt[]) {
  const delay = ({ delivery, outcome }: Attempt) =>
    outcome === "retrying" ? config.retrySchedule[delivery.attempts] : 0;
  const ids = attempts.map((a) => a.delivery.id);
  // Leases go as text: the driver would make a timestamptz[] of Dates, losing the microseconds.
  // The endpoints are locked first (the other parts read `ep`), in id order, as a DELETE of an
  // endpoint locks it and then, cascading, its deliveries: no deadlock with a DELETE or another batch.
  await sql`
    with result as (
      select * from unnest(
        ${ids}::bigint[], ${attempts.map((a) => a.delivery.endpoint_id)}::bigint[],
        ${attempts.map((a) => a.delivery.lease)}::text[],
        ${attempts.map((a) => a.result.statusCode)}::int[],
        ${attempts.map((a) => a.result.durationMs)}::int[],
        ${attempts.map((a) => a.result.error)}::text[],
        ${attempts.map((a) => a.result.responseBody)}::text[],
        ${attempts.map((a) => (a.outcome === "retrying" ? "pending" : a.outcome))}::text[],
        ${attempts.map(delay)}::int[])
        with ordinality
        as r(delivery_id, endpoint_id, lease, status_code, duration_ms, error, response_body,
          status, delay, n)
    ), ep as (
      select id from api.webhook_endpoints
      where id in (select endpoint_id from result)
      order by id
      for key share
    ), attempt as (
      insert into api.webhook_attempts
        (delivery_id, status_code, duration_ms, error, response_body)
      select r.delivery_id, r.status_code, r.duration_ms, r.error, r.response_body
      from result r join ep on ep.id = r.endpoint_id
      order by r.n
    ), recorded as (
      update api.webhook_deliveries d set
        attempts = d.attempts + 1,
        last_status_code = r.status_code,
        leased_until = null,
        status = r.status,
        next_attempt_at = now() + make_interval(secs => r.delay)
      from result r join ep on ep.id = r.endpoint_id
      -- The ids as a list too: the deliveries are found by primary key, whatever the statistics.
      where d.id = any(${ids}::bigint[]) and d.id = r.delivery_id
        and d.leased_until = r.lease::timestamptz
      returning d.id, d.endpoint_id, d.order_id, d.status
    ), promoted as (
      -- H5: the order's next delivery, never attempted, waited behind this one: due now.
      update api.webhook_deliveries d set next_attempt_at = now()
      from recorded done cross join lateral (
        select n.id from api.webhook_deliveries n
        where n.endpoint_id = done.endpoint_id and n.status = 'pending'
          and coalesce(n.order_id, 0) = coalesce(done.order_id, 0)
          and n.id <> all(${ids}::bigint[])
        order by n.id
        limit 1
      ) next
      where done.status <> 'pending' and d.id = next.id and d.attempts = 0
    ), endpoint_outcome as (
      select r.endpoint_id as id, bool_or(r.status = 'succeeded') as succeeded,
        bool_or(r.status_code = 410) as gone
      from result r join ep on ep.id = r.endpoint_id
      group by r.endpoint_id
    )
    update api.webhook_endpoints e set
      failing_since = case when o.succeeded then null else coalesce(e.failing_since, now()) end,
      status = case
        when o.gone then 'disabled'
        when not o.succeeded
          and e.failing_since < now() - make_interval(secs => ${config.disableAfterSeconds})
          then 'disabled'
        else e.status end,
      disabled_reason = case
        when e.status = 'disabled' then e.disabled_reason
        when o.gone then 'gone'
        when not o.succeeded
          and e.failing_since < now() - make_interval(secs => ${config.disableAfterSeconds})
          then 'failing'
        else e.disabled_reason end,
      -- H3 (v5): when the api disabled it; by no admin.
      disabled_at = case
        when e.status = 'disabled' then e.disabled_at
        when o.gone or (not o.succeeded
          and e.failing_since < now() - make_interval(secs => ${config.disableAfterSeconds}))
          then now()
        else e.disabled_at end,
      disabled_by = case
        when e.status = 'disabled' then e.disabled_by
        when o.gone or (not o.succeeded
          and e.failing_since < now() - make_interval(secs => ${config.disableAfterSeconds}))
          then null
        else e.disabled_by end
    from endpoint_outcome o
    where e.id = o.id and (not o.succeeded or o.gone or e.failing_since is not null)`;
}

/**
 * H4, H9: records attempts as they end, group-commit style (`GroupCommitQueue`): the first is
 * written at once, and those that end while a batch statement runs form the next batch, so under
 * load a round of attempts costs one statement instead of one each; at a trickle an attempt is
 * still recorded at once. A batch that fails is written again one attempt at a time, so an
 * attempt that cannot be recorded never holds back or repeats the others of its batch (H9).
 */
export class AttemptRecorder {
  private readonly queue: GroupCommitQueue<Attempt, AttemptOutcome>;

  constructor(
    sql: Sql,
    private readonly config: WebhookConfig,
    maxBatch = 256,
  ) {
    this.queue = new GroupCommitQueue(
      async (batch) => {
        await recordAttempts(sql, config, batch);
        return batch.map((attempt) => attempt.outcome);
      },
      { maxBatch, isolateFailures: true },
    );
  }

  /** Resolves with the outcome once it is on the log; rejects when its statement failed. */
  record(delivery: LeasedDelivery, result: AttemptResult): Promise<AttemptOutcome> {
    return this.queue.add({ delivery, result, outcome: outcomeOf(this.config, delivery, result) });
  }
}

import type { Sql } from "@commerce/shared/platform/database";
import type { WebhookConfig } from "../../config";
import type { AttemptResult } from "./sender";

/**
 * H3, H4: the attempt on the log and its consequence, in one statement: succeeded; retried
 * after the schedule's next delay; failed after its last; a 410 disables the endpoint
 * (`gone`), and failing for longer than WEBHOOK_DISABLE_AFTER_SECONDS disables it (`failing`).
 * The delivery is changed only while this process still holds the lease it claimed.
 */
export async function recordAttempt(
  sql: Sql,
  config: WebhookConfig,
  /** The leased delivery: `lease` is its `leased_until` as PostgreSQL wrote it. */
  delivery: { id: number; endpoint_id: number; attempts: number; lease: string },
  result: AttemptResult,
) {
  const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
  const attempts = delivery.attempts + 1;
  const delay = config.retrySchedule[attempts - 1];
  const outcome = ok ? "succeeded" : delay === undefined ? "failed" : "retrying";
  const endpointChange = ok
    ? sql`failing_since = null`
    : sql`
        failing_since = coalesce(failing_since, now()),
        status = case
          when ${result.statusCode === 410} then 'disabled'
          when failing_since < now() - make_interval(secs => ${config.disableAfterSeconds})
            then 'disabled'
          else status end,
        disabled_reason = case
          when status = 'disabled' then disabled_reason
          when ${result.statusCode === 410} then 'gone'
          when failing_since < now() - make_interval(secs => ${config.disableAfterSeconds})
            then 'failing'
          else disabled_reason end`;
  // One statement, one round trip. The endpoint is locked first (the other parts read `ep`),
  // in the order a DELETE of the endpoint locks it and then, cascading, its deliveries.
  await sql`
    with ep as (
      select id from api.webhook_endpoints where id = ${delivery.endpoint_id} for key share
    ), attempt as (
      insert into api.webhook_attempts
        (delivery_id, status_code, duration_ms, error, response_body)
      select ${delivery.id}, ${result.statusCode}, ${result.durationMs}, ${result.error},
        ${result.responseBody}
      from ep
    ), delivery as (
      update api.webhook_deliveries set
        attempts = attempts + 1,
        last_status_code = ${result.statusCode},
        leased_until = null,
        status = ${outcome === "retrying" ? "pending" : outcome},
        next_attempt_at = now() + make_interval(secs => ${delay ?? 0})
      from ep
      where webhook_deliveries.id = ${delivery.id}
        and leased_until = ${delivery.lease}::timestamptz
    )
    update api.webhook_endpoints set ${endpointChange}
    where id = (select id from ep) and (${!ok} or failing_since is not null)`;
  return outcome;
}

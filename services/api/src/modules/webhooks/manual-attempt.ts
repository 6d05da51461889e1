import type { Sql } from "@commerce/shared/platform/database";
import { ConflictError, NotFoundError } from "@commerce/shared/platform/errors";
import type { WebhookConfig } from "../../config";
import { sendDelivery } from "./sender";
import { signedDelivery } from "./signature";

type Target = {
  endpoint_status: string;
  leased: boolean;
  ahead: string | null;
  message_id: string;
  event_type: string;
  created_at: string;
  payload: unknown;
  url: string;
  secret: string;
  previous_secret: string | null;
};

export type ManualOutcome = {
  at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  response_body: string | null;
  outcome: "succeeded" | "failed";
};

/**
 * H4: an admin's retry, attempted during the request, so its answer carries the outcome. It
 * costs the delivery no place in its schedule (H3): the attempt is on the log and counts in
 * `manual_attempts`, not in `attempts`, and a failure leaves `next_attempt_at` and the status
 * as they were; a success ends the delivery (and lets the order's next one go, H5), a 410
 * disables the endpoint (`gone`). Refused (409) while the endpoint is disabled, while an attempt
 * of it is in flight, or while an earlier delivery of its order waits at this endpoint (H5).
 *
 * N22 (v5): manual attempts of one delivery are serialized by a row lock on the delivery, held
 * from the checks to the recorded attempt (one transaction), so ten concurrent retries make ten
 * attempts one after another, each on the log, never ten at once. The dispatcher skips a locked
 * delivery (`skip locked`), and `recoverFailed` waits for it. A retry waits for the lock at most
 * `manualLockWaitMs`, then gets 409 `attempt_in_flight`.
 */
export async function attemptNow(
  sql: Sql,
  config: WebhookConfig,
  endpointId: number,
  deliveryId: number,
): Promise<ManualOutcome> {
  return withDeliveryLock(sql, manualLockWaitMs(config), deliveryId, (tx) =>
    attemptLocked(tx, config, endpointId, deliveryId),
  );
}

/**
 * N22: how long a manual retry waits for another attempt of its delivery: one attempt's timeout
 * and a margin, so a retry queued behind a slow one still gets its turn.
 */
export const manualLockWaitMs = (config: WebhookConfig) => config.timeoutSeconds * 1000 + 5000;

/**
 * N22: runs `work` in a transaction whose statements wait at most `waitMs` for a row lock
 * (`lock_timeout`); a lock not obtained in time is a 409 `attempt_in_flight`, never a 5xx.
 */
export async function withDeliveryLock<T>(
  sql: Sql,
  waitMs: number,
  deliveryId: number | undefined,
  work: (tx: Sql) => Promise<T>,
): Promise<T> {
  try {
    return (await sql.begin(async (tx) => {
      await tx.unsafe(`set local lock_timeout = ${Math.round(waitMs)}`);
      return work(tx as unknown as Sql);
    })) as T;
  } catch (error) {
    if ((error as { code?: string }).code === "55P03")
      throw new ConflictError(
        `${deliveryId ? `Delivery ${deliveryId}` : "A delivery of this endpoint"} is being ` +
          "attempted right now; read it again in a moment",
        undefined,
        "attempt_in_flight",
      );
    throw error;
  }
}

async function attemptLocked(
  sql: Sql,
  config: WebhookConfig,
  endpointId: number,
  deliveryId: number,
): Promise<ManualOutcome> {
  // The endpoint's row is read, not locked: the lock is the delivery's (`for update of d`).
  const [target] = await sql<Target[]>`
    select e.status as endpoint_status, d.leased_until > now() as leased,
      (select a.id::text from api.webhook_deliveries a
        where a.endpoint_id = d.endpoint_id and a.status = 'pending' and a.id < d.id
          and d.order_id is not null and a.order_id = d.order_id
        order by a.id limit 1) as ahead,
      d.message_id, d.event_type, d.payload,
      to_char(d.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
      e.url, e.secret,
      case when e.previous_secret_until > now() then e.previous_secret end as previous_secret
    from api.webhook_deliveries d join api.webhook_endpoints e on e.id = d.endpoint_id
    where d.id = ${deliveryId} and d.endpoint_id = ${endpointId}
    for update of d`;
  if (!target)
    throw new NotFoundError(`Delivery ${deliveryId} of endpoint ${endpointId} does not exist`);
  if (target.endpoint_status !== "enabled")
    throw new ConflictError(
      `Webhook endpoint ${endpointId} is disabled: nothing is sent to it; enable it first`,
      undefined,
      "endpoint_disabled",
    );
  if (target.leased)
    throw new ConflictError(
      `Delivery ${deliveryId} is being attempted right now; read it again in a moment`,
      undefined,
      "attempt_in_flight",
    );
  if (target.ahead)
    throw new ConflictError(
      `Delivery ${deliveryId} waits behind delivery ${target.ahead} of the same order ` +
        "(events of one order arrive in order); retry that one first",
      undefined,
      "order_waits_behind",
    );

  const secrets = [target.secret, target.previous_secret].filter((s) => s !== null);
  const { body, headers } = signedDelivery(target, secrets);
  const result = await sendDelivery(
    target.url,
    headers,
    body,
    config.timeoutSeconds * 1000,
    config,
  );
  const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
  const [recorded] = await sql<{ at: string }[]>`
    with attempt as (
      insert into api.webhook_attempts
        (delivery_id, status_code, duration_ms, error, response_body)
      values (${deliveryId}, ${result.statusCode}, ${result.durationMs}, ${result.error},
        ${result.responseBody})
      returning at
    ), delivery as (
      update api.webhook_deliveries d set
        manual_attempts = d.manual_attempts + 1,
        last_status_code = ${result.statusCode},
        status = case when ${ok} then 'succeeded' else d.status end
      where d.id = ${deliveryId}
      returning d.id, d.endpoint_id, d.order_id
    ), promoted as (
      -- H5: the order's next delivery, never attempted, waited behind this one: due now.
      update api.webhook_deliveries n set next_attempt_at = now()
      from delivery done
      where ${ok} and n.id = (select x.id from api.webhook_deliveries x
          where x.endpoint_id = done.endpoint_id and x.status = 'pending'
            and coalesce(x.order_id, 0) = coalesce(done.order_id, 0) and x.id <> done.id
          order by x.id limit 1)
        and n.attempts = 0
    ), endpoint as (
      update api.webhook_endpoints e set
        failing_since = case when ${ok} then null else e.failing_since end,
        status = case when ${result.statusCode === 410} then 'disabled' else e.status end,
        disabled_reason = case when ${result.statusCode === 410} then 'gone'
          else e.disabled_reason end,
        -- H3 (v5): when the api disabled it (a retry runs only while it is enabled).
        disabled_at = case when ${result.statusCode === 410} then now() else e.disabled_at end,
        disabled_by = case when ${result.statusCode === 410} then null else e.disabled_by end
      where e.id = ${endpointId}
    )
    select to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at from attempt`;
  return {
    at: recorded.at,
    status_code: result.statusCode,
    duration_ms: result.durationMs,
    error: result.error,
    response_body: result.responseBody,
    outcome: ok ? "succeeded" : "failed",
  };
}

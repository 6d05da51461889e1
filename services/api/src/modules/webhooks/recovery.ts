import { type MessageTopology, orderEventNames } from "@commerce/shared/contract/messages";
import type { Sql } from "@commerce/shared/platform/database";
import { NotFoundError, ValidationError } from "@commerce/shared/platform/errors";
import { withDeliveryLock } from "./manual-attempt";

/** H3: how far back replay-missing and recover reach; the api keeps order events this long. */
export const recoveryDays = 30;

/** H3: `since` as an ISO 8601 time, 400 when it is more than 30 days back. */
function sinceOf(since: string): string {
  const at = new Date(since);
  if (Number.isNaN(at.getTime()) || at.getTime() < Date.now() - recoveryDays * 86_400_000)
    throw new ValidationError("The request body is invalid", [
      { path: "/since", message: `must be a time at most ${recoveryDays} days back` },
    ]);
  return at.toISOString();
}

async function endpointExists(sql: Sql, endpointId: number) {
  const [endpoint] = await sql`select 1 from api.webhook_endpoints where id = ${endpointId}`;
  if (!endpoint) throw new NotFoundError(`Webhook endpoint ${endpointId} does not exist`);
}

/**
 * H3, Svix's "replay missing": a delivery, in event order, for every order event since `since`
 * that the endpoint subscribes to and never had a delivery for (e.g. one that happened while it
 * was disabled). H3 (v5): never one from before the endpoint existed, or from before it
 * subscribed to that event type (`events_since`): a `since` further back reaches no further. The events are read back from the api's outbox, which keeps them 30 days
 * (`OutboxRetention`); the unique (endpoint, message id) makes a second call queue nothing.
 */
export async function replayMissing(
  sql: Sql,
  topology: MessageTopology,
  endpointId: number,
  since: string,
): Promise<{ queued: number }> {
  const from = sinceOf(since);
  await endpointExists(sql, endpointId);
  const subjects = orderEventNames.map((name) => topology.orders.event(name));
  const names = orderEventNames.map((name) => `orders.${name}`);
  const queued = await sql`
    insert into api.webhook_deliveries (endpoint_id, event_type, message_id, order_id, payload)
    select e.id, n.name, o.message_id, (o.payload->>'order_id')::bigint, o.payload
    from api.webhook_endpoints e
    join api.outbox o on o.created_at >= ${from}::timestamptz
    join unnest(${subjects}::text[], ${names}::text[]) as n(subject, name) on n.subject = o.subject
    where e.id = ${endpointId} and (n.name = any(e.events) or '*' = any(e.events))
      -- H3 (v5): never an event from before the endpoint existed or subscribed to its type.
      and o.created_at >= e.created_at
      and o.created_at >= coalesce(least((e.events_since ->> n.name)::timestamptz,
        (e.events_since ->> '*')::timestamptz), e.created_at)
      and not exists (select from api.webhook_deliveries d
        where d.endpoint_id = e.id and d.message_id = o.message_id)
    order by o.id
    on conflict (endpoint_id, message_id) do nothing
    returning id`;
  return { queued: queued.length };
}

/**
 * H3, Svix's "recover": every `failed` delivery of the endpoint made since `since` is pending
 * again, due now, with its own message id (the same `webhook-id`). It gets one more attempt (its
 * schedule is spent): a failure leaves it `failed`. A second call finds none failed: 0.
 */
export async function recoverFailed(
  sql: Sql,
  endpointId: number,
  since: string,
  lockWaitMs: number,
): Promise<{ queued: number }> {
  const from = sinceOf(since);
  await endpointExists(sql, endpointId);
  // N22: a delivery an admin's retry is attempting is locked; recover waits for that attempt to
  // be recorded (at most `lockWaitMs`, then 409) and judges the delivery as it then is.
  const queued = await withDeliveryLock(
    sql,
    lockWaitMs,
    undefined,
    (tx) => tx`
      update api.webhook_deliveries
      set next_attempt_at = now(), leased_until = null, status = 'pending'
      where endpoint_id = ${endpointId} and status = 'failed' and created_at >= ${from}::timestamptz
      returning id`,
  );
  return { queued: queued.length };
}

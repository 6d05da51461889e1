import type { Sql } from "@commerce/shared/platform/database";
import type { Executor } from "../../db";
import { clientOf } from "../../lib/prepared";

/** An `orders.*` event as its outbox row carries it: the M3 name, message id and payload. */
export type WebhookEvent = {
  /** `orders.paid`, ... (M3), without any NATS prefix. */
  type: string;
  messageId: string;
  orderId: number | null;
  payload: unknown;
};

/**
 * H2, H6: the deliveries of events, inserted from a query that yields `(event_type, message_id,
 * order_id, payload)`: one row per event and enabled endpoint subscribed to it, and never a
 * second one for the same endpoint and message. For a statement that writes its outbox rows in
 * a CTE, so the deliveries come in the same round trip.
 */
export const deliveriesFrom = (sql: Sql, events: ReturnType<Sql>) => sql`
  insert into api.webhook_deliveries (endpoint_id, event_type, message_id, order_id, payload)
  select endpoint.id, event.event_type, event.message_id, event.order_id, event.payload
  from (${events}) as event (event_type, message_id, order_id, payload)
  join api.webhook_endpoints endpoint on endpoint.status = 'enabled'
    and (event.event_type = any(endpoint.events) or '*' = any(endpoint.events))
  order by event.order_id, event.message_id, endpoint.id
  on conflict (endpoint_id, message_id) do nothing`;

/**
 * H2, H6: the deliveries of `events`, in the caller's transaction (the one that writes their
 * outbox rows), as one `insert ... select`: nothing depends on NATS, nothing is lost if the
 * process dies after the commit, and a rolled-back move delivers nothing.
 */
export async function enqueueDeliveries(tx: Executor, events: WebhookEvent[]): Promise<void> {
  if (events.length === 0) return;
  const sql = clientOf(tx);
  await deliveriesFrom(
    sql,
    sql`select * from unnest(
      ${events.map((e) => e.type)}::text[],
      ${events.map((e) => e.messageId)}::text[],
      ${events.map((e) => e.orderId)}::bigint[],
      ${events.map((e) => JSON.stringify(e.payload))}::jsonb[])`,
  );
}

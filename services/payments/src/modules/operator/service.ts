import type { NotificationSource } from "@commerce/shared/contract/messages";
import { isoTimestamp, type Sql } from "@commerce/shared/platform/database";
import { ConflictError, NotFoundError } from "@commerce/shared/platform/errors";
import { offsetOf, type PageRequest, pageFromWindow } from "@commerce/shared/platform/http/paging";
import { parseTraceparent } from "@commerce/shared/platform/tracing";
import { messagePayload } from "../../lib/outbox-message";
import type { NotificationDetail, NotificationSummary, ReplayQueued } from "./model";

type NotificationRow = {
  key: string;
  id: string;
  provider: string;
  event: string;
  // bigint columns arrive from postgres.js as text.
  order_id: string | null;
  payment_ref: string | null;
  amount: string | null;
  currency: string | null;
  received_at: string;
  source_ip: string;
  published_at: string | null;
  traceparent: string | null;
  ignored: string | null;
  source: NotificationSource;
};

type MessageRow = {
  subject: string;
  message_id: string;
  created_at: string;
  published_at: string | null;
};

export type NotificationFilter = {
  orderId?: number;
  event?: string;
  provider?: string;
  source?: NotificationSource;
};

const numberOrNull = (value: string | null) => (value === null ? null : Number(value));

const toSummary = (row: NotificationRow): NotificationSummary => ({
  id: row.id,
  key: row.key,
  provider: row.provider,
  event: row.event,
  order_id: numberOrNull(row.order_id),
  // Rows from before M1 named no reference: theirs was the notification id (generic).
  payment_ref: row.payment_ref ?? row.id,
  amount: numberOrNull(row.amount),
  currency: row.currency,
  received_at: row.received_at,
  source_ip: row.source_ip,
  published_at: row.published_at,
  trace_id: parseTraceparent(row.traceparent)?.traceId ?? null,
  ignored: row.ignored,
  source: row.source,
});

/**
 * G5: the notification an operator names, by its key (`stripe:evt_...`, what the message and
 * the api's timeline carry) or by its provider's bare id; a key wins, then a generic id (whose
 * key it is), then any provider's. Undefined when none.
 */
async function keyOf(sql: Sql, named: string): Promise<string | undefined> {
  const [row] = await sql<{ key: string }[]>`
    select key from payments.notifications where key = ${named} or id = ${named}
    order by key = ${named} desc, provider = 'generic' desc, received_at limit 1`;
  return row?.key;
}

const whereOf = (sql: Sql, { orderId, event, provider, source }: NotificationFilter) =>
  sql`where true
    ${orderId === undefined ? sql`` : sql`and order_id = ${orderId}`}
    ${event === undefined ? sql`` : sql`and event = ${event}`}
    ${provider === undefined ? sql`` : sql`and provider = ${provider}`}
    ${source === undefined ? sql`` : sql`and source = ${source}`}`;

/**
 * V3: a page of stored notifications, newest first, each with when the message the webhook
 * queued for it was published. The page is cut first, so only its rows look up their message.
 */
export async function listNotifications(sql: Sql, filter: NotificationFilter, paging: PageRequest) {
  const rows = await sql<(NotificationRow & { total: number })[]>`
    with page as (
      select key, id, provider, event, order_id, payment_ref, amount, currency, received_at,
        source_ip, traceparent, ignored, source, count(*) over ()::int as total
      from payments.notifications ${whereOf(sql, filter)}
      order by received_at desc, id desc
      limit ${paging.perPage} offset ${offsetOf(paging)}
    ), published as (
      select page.*, (
        select o.published_at from payments.outbox o
        where o.payload->>'notification_id' = page.key and o.message_id = page.key
        order by o.id limit 1
      ) as published_at
      from page
    )
    select key, id, provider, event, order_id, payment_ref, amount, currency,
      ${isoTimestamp(sql, "received_at")} as received_at, source_ip,
      ${isoTimestamp(sql, "published_at")} as published_at, traceparent, ignored, source, total
    from published order by published.received_at desc, id desc`;
  return pageFromWindow(
    rows,
    () =>
      sql<{ total: number }[]>`
        select count(*)::int as total from payments.notifications ${whereOf(sql, filter)}`,
    paging,
    toSummary,
  );
}

/** V3: one notification with its raw body, the message the webhook queued and every replay. */
export async function getNotification(sql: Sql, named: string): Promise<NotificationDetail> {
  const key = await keyOf(sql, named);
  const [row] = await sql<(Omit<NotificationRow, "published_at"> & { raw_body: string })[]>`
    select key, id, provider, event, order_id, payment_ref, amount, currency,
      ${isoTimestamp(sql, "received_at")} as received_at, source_ip, traceparent, ignored, source,
      raw_body
    from payments.notifications where key = ${key ?? null}`;
  if (!row) throw new NotFoundError(`Notification ${named} does not exist`);
  const id = row.key;
  const messages = await sql<MessageRow[]>`
    select subject, message_id, ${isoTimestamp(sql, "created_at")} as created_at,
      ${isoTimestamp(sql, "published_at")} as published_at
    from payments.outbox where payload->>'notification_id' = ${id} order by id`;
  const asMessage = (message: MessageRow) => ({
    subject: message.subject,
    message_id: message.message_id,
    published_at: message.published_at,
  });
  const original = messages.find((message) => message.message_id === id);
  return {
    ...toSummary({ ...row, published_at: original?.published_at ?? null }),
    raw_body: row.raw_body,
    message: original ? asMessage(original) : null,
    replays: messages
      .filter((message) => message !== original)
      .map((message) => ({
        ...asMessage(message),
        requested_at: message.created_at,
      })),
  };
}

/**
 * V3: queues the notification's message again, with the payload the webhook queued (the same
 * notification id) under a message id of its own, `<notification id>:replay:<outbox row id>`.
 * JetStream drops a repeated Nats-Msg-Id for 24 hours, so reusing the notification id would make
 * a replay vanish just when it is most needed; a new id always reaches the consumer, whose
 * idempotency on the payload's notification id (M2) makes it harmless where it was applied.
 */
export async function replayNotification(
  sql: Sql,
  named: string,
  audit: { actor: string; note?: string },
): Promise<ReplayQueued> {
  const id = (await keyOf(sql, named)) ?? named;
  const [notification] = await sql<{ event: string; subject: string | null }[]>`
    select event, (
      select subject from payments.outbox
      where payload->>'notification_id' = ${id} and message_id = ${id} order by id limit 1
    ) as subject
    from payments.notifications where key = ${id}`;
  if (!notification) throw new NotFoundError(`Notification ${named} does not exist`);
  // The subject its own message went to: a provider's event name is not the message's (S3, Y2).
  const subject = notification.subject ?? undefined;
  if (!subject)
    throw new ConflictError(
      `Notification ${id} is a ${notification.event}, which makes no message to replay`,
    );
  // V5: the replay and its audit entry commit together, or neither does.
  const [queued] = await sql<{ message_id: string; created_at: string }[]>`
    with queued as (
      insert into payments.outbox (id, subject, message_id, payload, headers)
      select row_id, ${subject}, key || ':replay:' || row_id, ${messagePayload(sql)},
        case when traceparent is null then null
          else pg_catalog.jsonb_build_object('traceparent', traceparent) end
      from payments.notifications, nextval(pg_get_serial_sequence('payments.outbox', 'id')) as row_id
      where key = ${id}
      returning message_id, created_at
    ), audited as (
      insert into payments.audit_log (actor, action, target, detail)
      select ${audit.actor}, 'notification.replay', ${id},
        pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object('note', ${audit.note ?? null}::text,
          'message_id', message_id, 'subject', ${subject}::text))
      from queued
    )
    select message_id, ${isoTimestamp(sql, "created_at")} as created_at from queued`;
  return {
    notification_id: id,
    subject,
    message_id: queued.message_id,
    requested_at: queued.created_at,
  };
}

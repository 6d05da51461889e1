import type {
  DisputeStage,
  EventSource,
  MessageTopology,
  OrderEventName,
} from "@commerce/shared/contract/messages";
import type { Sql } from "@commerce/shared/platform/database";
import { isoTimestamp } from "@commerce/shared/platform/database";
import { formatTraceparent, type TraceContext } from "@commerce/shared/platform/tracing";
import { sql as sqlText } from "drizzle-orm";
import type { Executor } from "../../../db";
import { orderEvents } from "../../../db/schema";
import { clientOf, preparedStatements } from "../../../lib/prepared";
import { deliveriesFrom } from "../../webhooks/fan-out";

/** What caused an order event: the timeline's `source`, and the notification and trace if any. */
export type Cause = {
  source: EventSource;
  /** `cancel_reason` of a cancel; the payload's `reason`. */
  reason?: string;
  notificationId?: string;
  /** The trace the event belongs to; its `orders.*` message continues it, so one trace spans the money path (O8). */
  trace?: TraceContext;
  /** M1, L4: the provider's id of the payment a message was about; on the timeline entry's detail. */
  paymentRef?: string;
  /** G5: whose reference it is: payment references are compared within one provider only. */
  provider?: string;
  /** L5: a dispute's stage (`disputed` only): the timeline entry is `dispute_<stage>`. */
  stage?: DisputeStage;
  /** V5, M3: the admin's token `sub` for a manual move or a review; on the event and the timeline. */
  actor?: string;
  /** V5: why an admin made the move; in the timeline entry's detail (not on the event). */
  note?: string;
  /** F2–F4: the refund the shop asked for that this event is about, and its amount. */
  refund?: { id: number; amount: number };
};

/** The `traceparent` header text of a cause: the relay publishes it with the message (O8). */
export const traceparentOf = (cause: Pick<Cause, "trace">) =>
  cause.trace ? formatTraceparent(cause.trace) : null;

/** The column of `rows` an event's `at` is read from (a payment failure's rows carry `failed_at`). */
const atColumn: Record<OrderEventName, string> = {
  created: "created_at",
  paid: "paid_at",
  cancelled: "cancelled_at",
  refunded: "refunded_at",
  payment_failed: "failed_at",
  disputed: "disputed_at",
  refund_requested: "event_at",
  refund_failed: "event_at",
};

/** F2–F4: the events about a refund the shop asked for, which carry its id and amount. */
const refundEvents: OrderEventName[] = ["refund_requested", "refund_failed", "refunded"];

/**
 * The one place an `orders.*` message (M3) and its timeline entry (T1) are spelled: two CTEs,
 * `order_message` and `order_timeline`, writing for each row of the CTE `rows` its outbox row
 * (subject, message id, payload, traceparent header) and its timeline entry, in the statement
 * (so the transaction) of the move they announce (R5), and a third, `order_deliveries`, its
 * webhook deliveries to every endpoint subscribed to it (H2). `rows` has the columns of `api.orders`;
 * the cause is `"per row"` (columns `source`, `reason`, `notification_id`, `traceparent`,
 * `payment_ref`, `actor`, `note`, `refund_id`, `refund_amount` of `rows`) or one cause for every row. Placing an order, a move of
 * one order, a batch of moves and a payment failure all write through it, so what "paid" writes
 * is changed here, once. M3: the payload carries the order's `customer_id` and `items`, read by
 * primary key from `items` (`api.order_items`, or the CTE of the same statement that wrote them).
 */
export function orderEventWrites(
  sql: Sql,
  topology: MessageTopology,
  event: OrderEventName,
  rows: string,
  cause: Cause | "per row",
  items = "api.order_items",
) {
  const perRow = cause === "per row";
  const source = perRow ? sql`r.source` : sql`${cause.source}::text`;
  const reason = perRow ? sql`r.reason` : sql`${cause.reason ?? null}::text`;
  const notificationId = perRow
    ? sql`r.notification_id`
    : sql`${cause.notificationId ?? null}::text`;
  const traceparent = perRow ? sql`r.traceparent` : sql`${traceparentOf(cause)}::text`;
  const paymentRef = perRow ? sql`r.payment_ref` : sql`${cause.paymentRef ?? null}::text`;
  const provider = perRow ? sql`r.provider` : sql`${cause.provider ?? null}::text`;
  const stage = perRow ? sql`null::text` : sql`${cause.stage ?? null}::text`;
  // L5: a dispute is one event, `orders.disputed`, and three kinds of timeline entry.
  const timelineType = event === "disputed" ? sql`'dispute_' || ${stage}` : sql`${event}::text`;
  const actor = perRow ? sql`r.actor` : sql`${cause.actor ?? null}::text`;
  const note = perRow ? sql`r.note` : sql`${cause.note ?? null}::text`;
  const aboutRefund = refundEvents.includes(event);
  const refundId = !aboutRefund
    ? sql`null::bigint`
    : perRow
      ? sql`r.refund_id`
      : sql`${cause.refund?.id ?? null}::bigint`;
  const refundAmount = !aboutRefund
    ? sql`null::bigint`
    : perRow
      ? sql`r.refund_amount`
      : sql`${cause.refund?.amount ?? null}::bigint`;
  // F4: what the provider gave back so far, on the events about refunds.
  const refundedAmount = aboutRefund
    ? sql`case when ${refundId} is not null then r.refunded_amount end`
    : sql`null::bigint`;
  const at = isoTimestamp(sql, `r.${atColumn[event]}`);
  // JetStream de-duplicates on it; a payment may fail, and be disputed, more than once, so those
  // are per notification; an order may have many refunds, so theirs are per refund (the move to
  // `refunded` a refund completes names it too).
  const perNotification = event === "payment_failed" || event === "disputed";
  const messageKey = perNotification
    ? notificationId
    : event === "refunded"
      ? sql`r.id || coalesce('-refund-' || ${refundId}, '')`
      : aboutRefund
        ? refundId
        : sql`r.id`;
  const messageId = sql`${`order-${event}-`}::text || ${messageKey}`;
  return sql`
    order_message as (
      insert into api.outbox (subject, message_id, payload, headers)
      select ${topology.orders.event(event)}::text, ${messageId},
        pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object('order_id', r.id, 'status', r.status,
          'amount', coalesce(${refundAmount}, r.amount), 'currency', r.currency,
          'refund_id', ${refundId}, 'refunded_amount', ${refundedAmount},
          'payment_ref', ${aboutRefund ? paymentRef : sql`null::text`},
          'provider', ${aboutRefund ? provider : sql`null::text`}, 'at', ${at}, 'source', ${source},
          'reason', ${reason}, 'notification_id', ${notificationId},
          'paid_at', ${event === "paid" ? at : sql`null::text`}, 'actor', ${actor}, 'stage', ${stage},
          'customer_id', r.customer_id,
          'items', (select pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('product_id', i.product_id,
              'name', i.name, 'qty', i.qty, 'unit_price', i.unit_price) order by i.line)
            from ${sql(items)} i where i.order_id = r.id))),
        case when ${traceparent} is not null
          then pg_catalog.jsonb_build_object('traceparent', ${traceparent}) end
      from ${sql(rows)} r
      returning message_id, payload
    ), order_deliveries as (
      -- H2, H6: the event's webhook deliveries commit with its outbox row, or neither does.
      ${deliveriesFrom(sql, sql`select ${`orders.${event}`}::text, message_id, (payload->>'order_id')::bigint, payload from order_message`)}
    ), order_timeline as (
      insert into api.order_events (order_id, type, at, source, notification_id, actor, detail)
      select r.id, ${timelineType}, ${sql(`r.${atColumn[event]}`)}, ${source}, ${notificationId}, ${actor},
        pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object('reason', ${reason}, 'payment_ref', ${paymentRef},
          'provider', ${provider}, 'stage', ${stage}, 'note', ${note}, 'refund_id', ${refundId},
          'amount', ${refundAmount}, 'refunded_amount', ${refundedAmount}))
      from ${sql(rows)} r
    )`;
}

/**
 * L4, M3: a payment that failed moves nothing, but is announced like a move: one
 * `orders.payment_failed` (per notification) and one timeline entry, in the caller's transaction.
 */
export async function announcePaymentFailed(
  tx: Executor,
  topology: MessageTopology,
  orderId: number,
  cause: Cause,
): Promise<void> {
  const sql = clientOf(tx);
  await sql`
    with failed as (select *, pg_catalog.clock_timestamp() as failed_at from api.orders where id = ${orderId}),
    ${orderEventWrites(sql, topology, "payment_failed", "failed", cause)}
    select 1`;
}

/**
 * L5: a dispute is announced like a move, though nothing moves: one `orders.disputed` (per
 * notification) and one `dispute_<stage>` timeline entry, in the caller's transaction.
 */
export async function announceDispute(
  tx: Executor,
  topology: MessageTopology,
  orderId: number,
  cause: Cause & { stage: DisputeStage },
): Promise<void> {
  const sql = clientOf(tx);
  await sql`
    with disputed as (select *, pg_catalog.clock_timestamp() as disputed_at from api.orders where id = ${orderId}),
    ${orderEventWrites(sql, topology, "disputed", "disputed", cause)}
    select 1`;
}

/**
 * The kinds of timeline entry (T1): the order events (a dispute's as `dispute_<stage>`, L5), and
 * a payment review opened or resolved.
 */
export type TimelineType =
  | Exclude<OrderEventName, "disputed">
  | `dispute_${DisputeStage}`
  | "review_opened"
  | "review_resolved";

const run = preparedStatements((db) => ({
  recordOnTimeline: db
    .insert(orderEvents)
    .values({
      orderId: sqlText.placeholder("orderId"),
      type: sqlText.placeholder("type"),
      source: sqlText.placeholder("source"),
      notificationId: sqlText.placeholder("notificationId"),
      actor: sqlText.placeholder("actor"),
      detail: sqlText.placeholder("detail"),
    })
    .prepare("record_on_timeline"),
}));

/**
 * T1: a timeline entry that is no move (a payment review opened or resolved), in the caller's
 * transaction, the same one as what it records. Moves write theirs through `orderEventWrites`.
 */
export async function recordOnTimeline(
  tx: Executor,
  orderId: number,
  type: "review_opened" | "review_resolved",
  cause: Pick<Cause, "source" | "notificationId" | "actor">,
  detail: Record<string, unknown> = {},
): Promise<void> {
  await run(tx, "recordOnTimeline", {
    orderId,
    type,
    source: cause.source,
    notificationId: cause.notificationId ?? null,
    actor: cause.actor ?? null,
    detail,
  });
}

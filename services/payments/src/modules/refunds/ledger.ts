import type {
  MessageTopology,
  RefundOutcomeStatus,
  RefundRequestMessage,
} from "@commerce/shared/contract/messages";
import { isoTimestamp, type Sql } from "@commerce/shared/platform/database";
import type { RefundState } from "../../db/schema";

/** A refund's row as the worker reads it (64-bit integers as numbers, times as Dates). */
export type RefundRow = {
  refund_id: number;
  order_id: number;
  provider: string;
  payment_ref: string;
  amount: number;
  currency: string;
  reason: string | null;
  status: RefundState;
  provider_refund_id: string | null;
  attempts: number;
  received_at: Date;
};

const rowOf = (raw: Record<string, unknown>): RefundRow => ({
  refund_id: Number(raw.refund_id),
  order_id: Number(raw.order_id),
  provider: raw.provider as string,
  payment_ref: raw.payment_ref as string,
  amount: Number(raw.amount),
  currency: raw.currency as string,
  reason: (raw.reason as string | null) ?? null,
  status: raw.status as RefundState,
  provider_refund_id: (raw.provider_refund_id as string | null) ?? null,
  attempts: Number(raw.attempts),
  received_at: new Date(raw.received_at as string),
});

/**
 * F2: the idempotent consumer of `orders.refund_requested`: one row per refund id, however often
 * the message is delivered (a redelivery, a replica, a replay). True when it is new.
 */
export async function recordRequest(
  sql: Sql,
  request: RefundRequestMessage,
  subject: string,
): Promise<boolean> {
  const rows = await sql`
    insert into payments.refunds (refund_id, order_id, provider, payment_ref, amount, currency,
      reason, request_subject)
    values (${request.refund_id}, ${request.order_id}, ${request.provider}, ${request.payment_ref},
      ${request.amount}, ${request.currency}, ${request.reason ?? null}, ${subject})
    on conflict (refund_id) do nothing
    returning refund_id`;
  return rows.length === 1;
}

/**
 * F3, F7: up to `batch` refunds of this topology whose next attempt is due, no more of one
 * provider than it has room for, leased for `leaseMs`
 * (`FOR UPDATE SKIP LOCKED`: replicas take different ones; a worker killed mid-call leaves a
 * lease that expires, and the refund is asked again with its key).
 */
export async function claimDue(
  sql: Sql,
  subject: string,
  batch: number,
  leaseMs: number,
  /** F7: how many more refunds each provider may have in flight now; a provider not named, `fresh`. */
  room: { perProvider: Record<string, number>; fresh: number },
): Promise<RefundRow[]> {
  const rows = await sql`
    with candidate as (
      select refund_id, provider,
        row_number() over (partition by provider order by next_attempt_at, refund_id) as place
      from payments.refunds
      where status in ('requested', 'pending') and request_subject = ${subject}
        and next_attempt_at <= now() and (leased_until is null or leased_until < now())
    ), due as (
      select r.refund_id from payments.refunds r join candidate c using (refund_id)
      where c.place <= coalesce((${JSON.stringify(room.perProvider)}::jsonb ->> c.provider)::int, ${room.fresh})
      order by r.next_attempt_at
      limit ${batch}
      for update of r skip locked
    )
    update payments.refunds r
    set leased_until = now() + ${leaseMs} * interval '1 millisecond', attempts = r.attempts + 1
    from due where r.refund_id = due.refund_id
    returning r.*`;
  return rows.map(rowOf);
}

/**
 * B1, F3: a refund of this topology (`subject`, its requests' subject) by its id, for
 * reconciliation to confirm what the provider says of it; undefined when it is not one of ours.
 */
export async function refundOf(
  sql: Sql,
  subject: string,
  refundId: number,
  provider: string,
): Promise<RefundRow | undefined> {
  const [row] = await sql`
    select * from payments.refunds
    where refund_id = ${refundId} and provider = ${provider} and request_subject = ${subject}`;
  return row ? rowOf(row) : undefined;
}

/** What an attempt leads to: the refund's next state, and when to look again. */
export type Step = {
  status: RefundState;
  providerRefundId?: string;
  failureReason?: string;
  lastError?: string;
  retryInMs: number;
};

/**
 * F2, F3: records an attempt's result in one transaction: the refund's row and, when its status
 * changed, its `payments.order.refund_outcome` in the outbox (message id
 * `refund-<refund_id>-<status>`), so the api hears of every change exactly once. A refund already
 * settled (by another worker whose lease expired) is left as it is. True when an outbox row was
 * written.
 */
export async function recordStep(
  sql: Sql,
  topology: MessageTopology,
  row: RefundRow,
  step: Step,
): Promise<boolean> {
  const announce = step.status !== row.status;
  const outcome: RefundOutcomeStatus | undefined =
    step.status === "requested" ? undefined : step.status;
  const written = await sql`
    with changed as (
      update payments.refunds set status = ${step.status},
        provider_refund_id = coalesce(${step.providerRefundId ?? null}, provider_refund_id),
        failure_reason = coalesce(${step.failureReason ?? null}, failure_reason),
        last_error = ${step.lastError ?? null},
        next_attempt_at = now() + ${step.retryInMs} * interval '1 millisecond',
        leased_until = null,
        settled_at = case when ${step.status} in ('succeeded', 'failed', 'unknown') then now()
          else settled_at end
      where refund_id = ${row.refund_id} and status in ('requested', 'pending')
      returning *, now() as changed_at
    ), queued as (
      insert into payments.outbox (subject, message_id, payload)
      select ${topology.payments.refundOutcome}, 'refund-' || refund_id || '-' || status,
        pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
          'refund_id', refund_id, 'order_id', order_id, 'status', status, 'amount', amount,
          'currency', currency, 'provider', provider, 'payment_ref', payment_ref,
          'provider_refund_id', provider_refund_id, 'failure_reason', failure_reason,
          'at', ${isoTimestamp(sql, "changed_at")}))
      from changed where ${announce && outcome !== undefined}::boolean
      returning 1
    )
    select count(*)::int as n from queued`;
  return Number(written[0]?.n ?? 0) > 0;
}

/**
 * F3: what Adyen's `REFUND` notification said of a refund it took, if it arrived: the stored
 * notification `adyen:REFUND:<pspReference>:<success>` (Y2), and its `reason` when it failed; or
 * (B1) the report line that says it was made, `adyen:report:Refunded:<pspReference>`.
 */
export async function adyenRefundNotified(
  sql: Sql,
  pspReference: string,
): Promise<{ success: boolean; reason?: string } | undefined> {
  const keys = [
    `adyen:REFUND:${pspReference}:true`,
    `adyen:REFUND:${pspReference}:false`,
    `adyen:report:Refunded:${pspReference}`,
  ];
  const [stored] = await sql<{ key: string; raw_body: string }[]>`
    select key, raw_body from payments.notifications where key = any(${keys}::text[])
    order by received_at limit 1`;
  if (!stored) return undefined;
  if (!stored.key.endsWith(":false")) return { success: true };
  let reason: string | undefined;
  try {
    const batch = JSON.parse(stored.raw_body) as {
      notificationItems?: {
        NotificationRequestItem?: { pspReference?: string; reason?: string };
      }[];
    };
    reason = batch.notificationItems
      ?.map((entry) => entry.NotificationRequestItem)
      .find((item) => item?.pspReference === pspReference)?.reason;
  } catch {}
  return { success: false, reason: reason || undefined };
}

/** F6: the refunds without an outcome yet (requested or pending), and the oldest one's age. */
export async function awaitingOutcome(sql: Sql): Promise<{ count: number; oldestSeconds: number }> {
  const [row] = await sql<{ count: number; oldest: number | null }[]>`
    select count(*)::int as count,
      extract(epoch from now() - min(received_at))::float8 as oldest
    from payments.refunds where status in ('requested', 'pending')`;
  return { count: row.count, oldestSeconds: Math.max(0, row.oldest ?? 0) };
}

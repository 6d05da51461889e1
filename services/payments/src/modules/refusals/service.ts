import { isoTimestamp, type Sql } from "@commerce/shared/platform/database";
import type { RefusalGroup } from "./model";
import { examplesKept, type RefusalExample } from "./tally";

/** The route reads this far back at most (V4). */
const windowHours = 24;

/**
 * V4: the refusals since `since` (at most 24 hours back), every replica's, by provider and reason,
 * with the latest few examples; with `orderId`, the refusals that named that order (N21: its own
 * rows, see `refusalsOfOrder`).
 */
export async function listRefusals(
  sql: Sql,
  { since, orderId }: { since?: Date; orderId?: number },
): Promise<RefusalGroup[]> {
  const floor = new Date(Date.now() - windowHours * 3600_000);
  const from = since && since > floor ? since : floor;
  if (orderId !== undefined) return refusalsOfOrder(sql, orderId, from);
  const rows = await sql<
    {
      provider: string;
      reason: string;
      count: string;
      first_at: string;
      last_at: string;
      examples: RefusalExample[];
    }[]
  >`
    with kept as (
      select * from payments.refused_notifications
      where minute >= date_trunc('minute', ${from.toISOString()}::timestamptz) and last_at >= ${from.toISOString()}::timestamptz
    ), example as (
      select provider, reason, e.value as value
      from kept, jsonb_array_elements(kept.examples) as e
      where (e.value->>'at')::timestamptz >= ${from.toISOString()}::timestamptz
        ${orderId === undefined ? sql`` : sql`and e.value->>'order_id' = ${String(orderId)}`}
    ), latest as (
      select provider, reason,
        jsonb_agg(value order by value->>'at' desc) filter (where n <= ${examplesKept}) as examples
      from (
        select *, row_number() over (partition by provider, reason order by value->>'at' desc) as n
        from example
      ) as ranked
      group by provider, reason
    ), grouped as (
      select k.provider, k.reason, sum(k.count)::text as count, min(k.first_at) as first_at,
        max(k.last_at) as last_at, coalesce(l.examples, '[]'::jsonb) as examples
      from kept k left join latest l using (provider, reason)
      ${orderId === undefined ? sql`` : sql`where l.examples is not null`}
      group by k.provider, k.reason, l.examples
    )
    select provider, reason, count, ${isoTimestamp(sql, "first_at")} as first_at,
      ${isoTimestamp(sql, "last_at")} as last_at, examples
    from grouped order by grouped.last_at desc, provider, reason`;
  return rows.map((row) => ({ ...row, count: Number(row.count) }));
}

/** V4: refusals of the last hour, every replica's, for the payments status line. */
export async function refusedLastHour(sql: Sql): Promise<number> {
  const [row] = await sql<{ count: string | null }[]>`
    select sum(count)::text as count from payments.refused_notifications
    where minute >= date_trunc('minute', now() - interval '1 hour')
      and last_at >= now() - interval '1 hour'`;
  return Number(row?.count ?? 0);
}

/**
 * N21 (v5): the refusals that named `orderId`, by provider and reason, last seen since `from`:
 * the true count (of the 48 hours kept) and the first and latest few examples, newest first.
 * They come from the order's own rows, so no flood naming other orders can push them out.
 */
async function refusalsOfOrder(sql: Sql, orderId: number, from: Date): Promise<RefusalGroup[]> {
  const rows = await sql<
    {
      provider: string;
      reason: string;
      count: string;
      first_at: string;
      last_at: string;
      examples: RefusalExample[];
    }[]
  >`
    select provider, reason, count::text as count, ${isoTimestamp(sql, "first_at")} as first_at,
      ${isoTimestamp(sql, "last_at")} as last_at,
      (select coalesce(jsonb_agg(e.value order by e.value->>'at' desc), '[]'::jsonb)
        from (select distinct value
          from jsonb_array_elements(first_examples || latest_examples)) as e) as examples
    from payments.order_refusals
    where order_id = ${orderId} and last_at >= ${from.toISOString()}::timestamptz
    order by last_at desc, provider, reason`;
  return rows.map((row) => ({ ...row, count: Number(row.count) }));
}

import type { Received } from "@commerce/testing/webhook-receiver";
import type postgres from "postgres";
import type { Stats } from "./stats";

export type Verdict = { name: string; pass: boolean; detail: string; violations: string[] };

type Sql = postgres.Sql;

const verdict = (name: string, violations: string[], detail: string): Verdict => ({
  name,
  pass: violations.length === 0,
  detail,
  violations: violations.slice(0, 20),
});

/** X5 (W5, R5, L2): every notification answered 2xx is stored once and applied once. */
export async function notificationsOnce(sql: Sql, stats: Stats): Promise<Verdict> {
  const accepted = [...new Set(stats.notifications.filter((n) => n.acceptedAt).map((n) => n.key))];
  const stored = new Set(
    (await sql`select key from payments.notifications where key = any(${accepted})`).map(
      (r) => r.key,
    ),
  );
  const processed = new Set(
    (
      await sql`select notification_id from api.processed_notifications where notification_id = any(${accepted})`
    ).map((r) => r.notification_id),
  );
  const entries = new Map<string, number>(
    (
      await sql`select notification_id, count(*)::int as n from api.order_events
        where notification_id is not null group by notification_id`
    ).map((r) => [r.notification_id, r.n]),
  );
  const violations: string[] = [];
  for (const key of accepted) {
    if (!stored.has(key)) violations.push(`${key}: answered 2xx but not stored by payments`);
    else if (!processed.has(key)) violations.push(`${key}: stored but never processed by the api`);
    else if ((entries.get(key) ?? 0) !== 1)
      violations.push(`${key}: ${entries.get(key) ?? 0} timeline entries (want 1)`);
  }
  for (const [key, n] of entries) if (n > 1) violations.push(`${key}: applied ${n} times`);
  return verdict(
    "every notification answered 2xx stored and applied exactly once",
    [...new Set(violations)],
    `${accepted.length} notifications accepted, ${stored.size} stored, ${processed.size} processed`,
  );
}

/** R5: no order paid twice. */
export async function noOrderPaidTwice(sql: Sql): Promise<Verdict> {
  const twice = await sql`select order_id, count(*)::int as n from api.order_events
    where type = 'paid' group by order_id having count(*) > 1`;
  const [{ paid }] =
    await sql`select count(*)::int as paid from api.order_events where type = 'paid'`;
  // R5: and never announced twice (one orders.paid in the outbox per order).
  const announced = await sql`select payload->>'order_id' as order_id, count(*)::int as n
    from api.outbox where subject like '%orders.paid' group by 1 having count(*) > 1`;
  return verdict(
    "no order paid twice",
    [
      ...twice.map((r) => `order ${r.order_id} paid ${r.n} times`),
      ...announced.map((r) => `order ${r.order_id}: ${r.n} orders.paid events`),
    ],
    `${paid} orders paid`,
  );
}

/**
 * L3, N5: for each tracked product, initial − taken by orders + given back = current stock: the
 * units of its orders still holding stock (created, paid, refunded) are exactly what is missing,
 * and the stock never went below zero (sampled through the run).
 */
export async function stockConserved(
  sql: Sql,
  initial: Map<number, number>,
  lowest: Map<number, number>,
): Promise<Verdict> {
  const violations: string[] = [];
  const lines: string[] = [];
  for (const [id, start] of initial) {
    const [{ stock }] = await sql`select stock from api.products where id = ${id}`;
    const [{ held }] = await sql`select coalesce(sum(i.qty), 0)::int as held
      from api.order_items i join api.orders o on o.id = i.order_id
      where i.product_id = ${id} and o.status in ('created', 'paid', 'refunded')`;
    const [{ given }] = await sql`select count(*)::int as given from api.order_events e
      join api.order_items i on i.order_id = e.order_id
      where i.product_id = ${id} and e.type = 'cancelled'`;
    lines.push(`product ${id}: ${start} − ${held} held = ${stock} (${given} cancels)`);
    if (start - held !== stock) violations.push(`product ${id}: ${start} − ${held} ≠ ${stock}`);
    if (stock < 0 || (lowest.get(id) ?? 0) < 0) violations.push(`product ${id}: stock below zero`);
  }
  return verdict("stock conserved and never negative", violations, lines.join("; "));
}

/** H2, H3: every `orders.*` event reached the receiver at least once, per order in order. */
export async function webhooksDelivered(sql: Sql, received: Received[]): Promise<Verdict> {
  const events = await sql`select message_id, subject, payload from api.outbox
    where subject like '%orders.%' order by id`;
  const got = new Set(received.map((r) => r.id));
  const violations: string[] = [];
  for (const event of events)
    if (!got.has(event.message_id))
      violations.push(
        `${event.subject} of order ${event.payload.order_id} (${event.message_id}) never delivered`,
      );
  // Per order: the first arrival of each webhook-id, in arrival order, has non-decreasing `at`.
  const firstSeen = new Map<number, { id: string; at: string }[]>();
  const seen = new Set<string>();
  for (const request of received) {
    if (seen.has(request.id)) continue;
    seen.add(request.id);
    const orderId = request.json.data?.order_id;
    const list = firstSeen.get(orderId) ?? [];
    const at = request.json.data?.at;
    if (typeof at !== "string") violations.push(`${request.id}: no \`at\` in the delivered event`);
    list.push({ id: request.id, at });
    firstSeen.set(orderId, list);
  }
  for (const [orderId, list] of firstSeen)
    for (let i = 1; i < list.length; i++)
      if (list[i].at < list[i - 1].at)
        violations.push(
          `order ${orderId}: ${list[i].id} (${list[i].at}) arrived after ${list[i - 1].id} (${list[i - 1].at})`,
        );
  const repeats = received.length - seen.size;
  return verdict(
    "every orders.* event delivered at least once, in order per order",
    violations,
    `${events.length} events, ${seen.size} delivered (${repeats} repeats)`,
  );
}

/** L2, L4: every open review has a reason the workload caused. */
export async function reviewsExplained(sql: Sql, stats: Stats): Promise<Verdict> {
  const reviews = await sql`select r.order_id, r.reason, r.notification_id, o.status
    from api.payment_reviews r join api.orders o on o.id = r.order_id where r.status = 'open'`;
  const secondPaid = new Set(
    stats.notifications.filter((n) => n.kind === "second payment").map((n) => n.orderId),
  );
  const refunded = new Set(
    stats.notifications.filter((n) => n.kind === "refund").map((n) => n.orderId),
  );
  const byReason = new Map<string, number>();
  const violations: string[] = [];
  for (const review of reviews) {
    byReason.set(review.reason, (byReason.get(review.reason) ?? 0) + 1);
    const explained =
      (review.reason === "duplicate_payment" && secondPaid.has(Number(review.order_id))) ||
      (review.reason === "refund_not_applicable" && refunded.has(Number(review.order_id))) ||
      // A payment that landed after the order was cancelled or expired (the workload cancels
      // some; an outage may outlast ORDER_TTL_SECONDS) and could not take its stock again.
      (review.reason === "order_not_payable" && review.status === "cancelled");
    if (!explained)
      violations.push(
        `order ${review.order_id}: ${review.reason} (${review.notification_id}), order ${review.status}`,
      );
  }
  return verdict(
    "every open review explained by the workload",
    violations,
    `${reviews.length} open: ${[...byReason].map(([r, n]) => `${r} ${n}`).join(", ") || "none"}`,
  );
}

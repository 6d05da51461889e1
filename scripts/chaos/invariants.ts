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
  const processedRows =
    await sql`select notification_id, outcome from api.processed_notifications where notification_id = any(${accepted})`;
  const processed = new Set(processedRows.map((r) => r.notification_id));
  // B1: a webhook that arrives after the report already paid its order is applied as the
  // payment that paid it (`same_payment`): processed once, nothing to put on the timeline.
  const samePayment = new Set(
    processedRows.filter((r) => r.outcome === "same_payment").map((r) => r.notification_id),
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
    else if ((entries.get(key) ?? 0) !== (samePayment.has(key) ? 0 : 1))
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
  // F3: a refund the shop asked for whose outcome stayed unknown past REFUND_GIVE_UP_HOURS.
  const askedRefund = new Set(stats.refunds.map((r) => r.orderId));
  const byReason = new Map<string, number>();
  const violations: string[] = [];
  for (const review of reviews) {
    byReason.set(review.reason, (byReason.get(review.reason) ?? 0) + 1);
    const explained =
      (review.reason === "duplicate_payment" && secondPaid.has(Number(review.order_id))) ||
      (review.reason === "refund_not_applicable" && refunded.has(Number(review.order_id))) ||
      (review.reason === "refund_unknown" && askedRefund.has(Number(review.order_id))) ||
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

/**
 * B2: every payment message deleted from the stream after JetStream's ack (the lost-messages
 * fault) was found and published again by payments' anti-entropy check and applied once by the
 * api, within 60 s of its publication plus the api's pause (the fault keeps both replicas asleep
 * for a few seconds after publication; the run's drain is not counted here), and
 * `money_path_gaps_found_total` grew by at least as many as were deleted.
 */
export async function lostPaymentsRepaired(sql: Sql, stats: Stats): Promise<Verdict> {
  const lost = stats.lostPayments;
  const violations: string[] = [];
  if (!lost.length)
    return verdict("messages lost after the ack found and applied again (B2)", [], "none deleted");
  const ids = lost.map((m) => m.notificationId);
  const processed = new Map<string, Date>(
    (
      await sql`select notification_id, processed_at from api.processed_notifications
        where notification_id = any(${ids})`
    ).map((r) => [r.notification_id, r.processed_at]),
  );
  const entries = new Map<string, number>(
    (
      await sql`select notification_id, count(*)::int as n from api.order_events
        where notification_id = any(${ids}) group by notification_id`
    ).map((r) => [r.notification_id, r.n]),
  );
  const resent = new Map<string, number>(
    (
      await sql`select payload->>'notification_id' as id, count(*)::int as n from payments.outbox
        where message_id like '%:resend:%' and payload->>'notification_id' = any(${ids})
        group by 1`
    ).map((r) => [r.id, r.n]),
  );
  const paidEvents = new Map<number, number>(
    (
      await sql`select order_id, count(*)::int as n from api.order_events
        where type = 'paid' and order_id = any(${lost.map((m) => m.orderId)}) group by order_id`
    ).map((r) => [Number(r.order_id), r.n]),
  );
  const delays: number[] = [];
  for (const m of lost) {
    const at = processed.get(m.notificationId);
    if (!at) {
      violations.push(`${m.notificationId} (seq ${m.seq}): never applied by the api`);
      continue;
    }
    const seconds = (at.getTime() - m.publishedAt) / 1000;
    delays.push(seconds);
    // 60 s of B2 plus the seconds the fault kept the api paused after the publication.
    if (seconds > 70)
      violations.push(`${m.notificationId}: applied ${seconds.toFixed(1)} s after publication`);
    if (!resent.has(m.notificationId))
      violations.push(`${m.notificationId}: applied without a B2 resend (who delivered it?)`);
    if ((entries.get(m.notificationId) ?? 0) !== 1)
      violations.push(
        `${m.notificationId}: ${entries.get(m.notificationId) ?? 0} timeline entries`,
      );
    if ((paidEvents.get(m.orderId) ?? 0) !== 1)
      violations.push(`order ${m.orderId}: paid ${paidEvents.get(m.orderId) ?? 0} times (want 1)`);
  }
  if (stats.gapsCounted < lost.length)
    violations.push(
      `money_path_gaps_found_total grew by ${stats.gapsCounted} across the faults, fewer than the ${lost.length} deleted`,
    );
  const slowest = delays.length ? Math.max(...delays).toFixed(1) : "—";
  return verdict(
    "messages lost after the ack found and applied again (B2)",
    violations,
    `${lost.length} deleted, ${processed.size} applied (each order paid once), slowest ${slowest} s ` +
      `after publication; money_path_gaps_found_total +${stats.gapsCounted}`,
  );
}

/** What the local provider servers hold, for F4's comparison. */
export type ProviderBooks = {
  /** Stripe: every refund, with the shop's refund id from its metadata. */
  stripe: { id: string; paymentRef: string; amount: number; status: string; refundId?: string }[];
  /** Adyen: every refund (success true or false). */
  adyen: { id: string; paymentRef: string; amount: number; success: boolean }[];
  /** The amount of each payment the providers hold, by its reference. */
  payments: Map<string, number>;
};

/**
 * F4: under the faults, the money agrees. The provider holds at most one refund per refund id;
 * refunds never sum to more than the payment, here or at the provider; every refund asked for
 * ended succeeded, failed or in a `refund_unknown` review; what the provider refunded is what the
 * shop recorded as succeeded, and is the order's `refunded_amount`; an order refunded in full is
 * `refunded`, with one `refunded` timeline entry per refund (the partial ones and the move, once).
 */
export async function refundsSettled(
  sql: Sql,
  stats: Stats,
  books: ProviderBooks,
): Promise<Verdict> {
  const violations: string[] = [];
  const asked = stats.refunds;
  const orderIds = [...new Set(asked.map((r) => r.orderId))];
  const rows = await sql`select id, order_id, amount, status, provider, payment_ref,
      provider_refund_id from api.refunds where order_id = any(${orderIds})`;
  const unknown = new Set(
    (
      await sql`select (message->>'refund_id')::bigint as refund_id from api.payment_reviews
        where reason = 'refund_unknown'`
    ).map((r) => Number(r.refund_id)),
  );
  const orders = new Map<number, { amount: number; status: string; refunded_amount: number }>(
    (
      await sql`select id, amount, status, refunded_amount from api.orders
        where id = any(${orderIds})`
    ).map((r) => [
      Number(r.id),
      { amount: Number(r.amount), status: r.status, refunded_amount: Number(r.refunded_amount) },
    ]),
  );
  const refundedEntries = new Map<number, number>(
    (
      await sql`select order_id, count(*)::int as n from api.order_events
        where type = 'refunded' and order_id = any(${orderIds}) group by order_id`
    ).map((r) => [Number(r.order_id), r.n]),
  );
  const byId = new Map(rows.map((r) => [Number(r.id), r]));
  const outcomes = new Map<string, number>();
  for (const r of asked) {
    const row = byId.get(r.refundId);
    const outcome = !row
      ? "missing"
      : row.status === "succeeded" || row.status === "failed"
        ? row.status
        : unknown.has(r.refundId)
          ? "refund_unknown review"
          : row.status;
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    if (!["succeeded", "failed", "refund_unknown review"].includes(outcome))
      violations.push(`refund ${r.refundId} of order ${r.orderId}: ${outcome} at the end`);
  }
  // At the provider: one refund per refund id, each one the shop knows.
  const stripeByRefund = new Map<string, number>();
  for (const refund of books.stripe)
    if (refund.refundId)
      stripeByRefund.set(refund.refundId, (stripeByRefund.get(refund.refundId) ?? 0) + 1);
  for (const [refundId, n] of stripeByRefund)
    if (n > 1) violations.push(`Stripe holds ${n} refunds for refund ${refundId}`);
  const known = new Set(rows.map((r) => r.provider_refund_id).filter(Boolean));
  for (const refund of [...books.stripe, ...books.adyen])
    if (!known.has(refund.id))
      violations.push(
        `provider refund ${refund.id} of ${refund.paymentRef}: no shop refund has it`,
      );
  const providerRefunded = new Map<string, number>();
  for (const r of books.stripe)
    if (r.status === "succeeded" || r.status === "pending")
      providerRefunded.set(r.paymentRef, (providerRefunded.get(r.paymentRef) ?? 0) + r.amount);
  for (const r of books.adyen)
    if (r.success)
      providerRefunded.set(r.paymentRef, (providerRefunded.get(r.paymentRef) ?? 0) + r.amount);
  for (const [ref, sum] of providerRefunded)
    if (sum > (books.payments.get(ref) ?? 0))
      violations.push(`payment ${ref}: the provider refunded ${sum} of ${books.payments.get(ref)}`);
  // Here: per order, never more than paid; the books equal the provider's; refunded once.
  let full = 0;
  let partly = 0;
  for (const orderId of orderIds) {
    const order = orders.get(orderId);
    if (!order) continue;
    const mine = rows.filter((r) => Number(r.order_id) === orderId);
    const requested = mine
      .filter((r) => r.status !== "failed")
      .reduce((sum, r) => sum + Number(r.amount), 0);
    const succeeded = mine.filter((r) => r.status === "succeeded");
    const made = succeeded.reduce((sum, r) => sum + Number(r.amount), 0);
    if (requested > order.amount)
      violations.push(`order ${orderId}: refunds of ${requested} recorded for ${order.amount}`);
    const ref = mine[0]?.payment_ref;
    const atProvider = providerRefunded.get(ref) ?? 0;
    if (atProvider !== made)
      violations.push(
        `order ${orderId}: the provider refunded ${atProvider}, the shop recorded ${made} as succeeded`,
      );
    if (order.refunded_amount !== made)
      violations.push(
        `order ${orderId}: refunded_amount ${order.refunded_amount}, refunds ${made}`,
      );
    if (made === order.amount) {
      full++;
      if (order.status !== "refunded")
        violations.push(`order ${orderId}: refunded in full but ${order.status}`);
    } else if (made > 0) {
      partly++;
      if (order.status !== "paid")
        violations.push(
          `order ${orderId}: refunded ${made} of ${order.amount} but ${order.status}`,
        );
    }
    if ((refundedEntries.get(orderId) ?? 0) !== succeeded.length)
      violations.push(
        `order ${orderId}: ${refundedEntries.get(orderId) ?? 0} refunded timeline entries for ${succeeded.length} refunds`,
      );
  }
  return verdict(
    "refunds: one per refund id at the provider, never more than paid, each settled, books agree (F4)",
    violations,
    `${asked.length} refunds asked for ${orderIds.length} orders: ` +
      `${[...outcomes].map(([o, n]) => `${o} ${n}`).join(", ") || "none"}; ` +
      `${full} orders refunded in full, ${partly} in part; at the providers ` +
      `${books.stripe.length} Stripe and ${books.adyen.length} Adyen refunds`,
  );
}

/**
 * B1 (v5): every payment the local providers hold is reflected here: its order paid (or refunded
 * since), or, when the order was cancelled or had expired first, an `order_not_payable` review;
 * the payments never notified were paid through reconciliation (Stripe's object sweep, Adyen's
 * report: a `paid` timeline entry whose source is `reconciliation`). Every refund the providers made is a succeeded refund here (F4
 * compares the amounts).
 */
export async function providerStatesReflected(
  sql: Sql,
  stats: Stats,
  held: { provider: string; ref: string; orderId: number }[],
  refunds: { id: string; made: boolean }[],
): Promise<Verdict> {
  const violations: string[] = [];
  const orderIds = [...new Set(held.map((p) => p.orderId))];
  const orders = new Map<number, string>(
    (await sql`select id, status from api.orders where id = any(${orderIds})`).map((r) => [
      Number(r.id),
      r.status,
    ]),
  );
  const notPayable = new Set(
    (
      await sql`select order_id from api.payment_reviews
        where reason = 'order_not_payable' and order_id = any(${orderIds})`
    ).map((r) => Number(r.order_id)),
  );
  const unnotifiedIds = stats.unnotified.map((u) => u.orderId);
  const reconciled = new Set(
    (
      await sql`select order_id from api.order_events where source = 'reconciliation'
        and type = 'paid' and order_id = any(${unnotifiedIds})`
    ).map((r) => Number(r.order_id)),
  );
  let paid = 0;
  let reviewed = 0;
  for (const p of held) {
    const status = orders.get(p.orderId);
    if (status === "paid" || status === "refunded") paid++;
    else if (status === "cancelled" && notPayable.has(p.orderId)) reviewed++;
    else violations.push(`${p.provider} payment ${p.ref} of order ${p.orderId}: order ${status}`);
  }
  let fromReport = 0;
  for (const u of stats.unnotified) {
    if (reconciled.has(u.orderId)) fromReport++;
    else if (!(orders.get(u.orderId) === "cancelled" && notPayable.has(u.orderId)))
      violations.push(
        `order ${u.orderId}: its ${u.provider} payment ${u.ref} never notified and not paid through reconciliation`,
      );
  }
  const made = refunds.filter((r) => r.made).map((r) => r.id);
  const succeeded = new Set(
    (
      await sql`select provider_refund_id from api.refunds
        where status = 'succeeded' and provider_refund_id = any(${made})`
    ).map((r) => r.provider_refund_id),
  );
  for (const id of made)
    if (!succeeded.has(id)) violations.push(`provider refund ${id}: not a succeeded refund here`);
  return verdict(
    "every provider state reflected (B1)",
    violations,
    `${held.length} payments at the providers: ${paid} orders paid, ${reviewed} cancelled first ` +
      `(order_not_payable); ${stats.unnotified.length} payments never notified ` +
      `(Stripe ${stats.unnotified.filter((u) => u.provider === "stripe").length}, Adyen ` +
      `${stats.unnotified.filter((u) => u.provider === "adyen").length}), ${fromReport} paid through ` +
      `reconciliation (${stats.reports.length} Adyen reports announced); ${made.length} refunds made, ` +
      `${succeeded.size} succeeded here`,
  );
}

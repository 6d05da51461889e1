/**
 * A shop's history, written straight into the tables as the paid path leaves them (issue 38):
 * `count` orders of one product (90% paid, 4% refunded, 4% cancelled, 2% still unpaid) with their
 * items, timeline entries, processed notifications, published `orders.*` outbox rows and webhook
 * deliveries (succeeded), and on payments' side the notifications and published outbox rows that
 * paid them. Then `analyze`, as autovacuum would have. Written in slices of 100,000 orders, so a
 * million is a few minutes, not one transaction of gigabytes.
 */
import type postgres from "postgres";

const slice = 100_000;

/** Adds orders `after + 1` to `count` of the history (so a history may be grown in steps). */
export async function writePaidHistory(sql: postgres.Sql, count: number, after = 0) {
  const [product] = await sql<{ id: number }[]>`
    select id from api.products where category = 'history' limit 1`;
  const productId =
    product?.id ??
    (
      await sql<{ id: number }[]>`
        insert into api.products (name, price, category) values ('History lamp', 1999, 'history')
        returning id`
    )[0].id;
  const [endpoint] = await sql<{ id: number }[]>`select id from api.webhook_endpoints limit 1`;
  for (let from = after; from < count; from += slice) {
    const to = Math.min(count, from + slice);
    await sql.begin(async (tx) => {
      // g is the order's place in the history: its status, customer and times follow from it.
      await tx`
        create temporary table history on commit drop as
        select g,
          case when g % 50 = 0 then 'created' when g % 25 = 1 then 'cancelled'
               when g % 25 = 2 then 'refunded' else 'paid' end as status,
          'hist-' || (g % 20000) as customer_id,
          now() - make_interval(secs => (${count} - g) * 2) as at,
          'hist-n-' || g as notification_id
        from generate_series(${from + 1}::int, ${to}::int) as g`;
      await tx`
        create temporary table placed on commit drop as
        with inserted as (
          insert into api.orders (customer_id, amount, currency, status, created_at, paid_at,
            cancelled_at, refunded_at, refunded_amount, cancel_reason)
          select customer_id, 1999, 'USD', status, at,
            case when status in ('paid', 'refunded') then at + interval '5 seconds' end,
            case when status = 'cancelled' then at + interval '15 minutes' end,
            case when status = 'refunded' then at + interval '1 day' end,
            case when status = 'refunded' then 1999 else 0 end,
            case when status = 'cancelled' then 'expired' end
          from history order by g
          returning id, customer_id, status, created_at)
        select i.*, h.notification_id, h.g from inserted i
        join history h on h.customer_id = i.customer_id and h.at = i.created_at`;
      await tx`
        insert into api.order_items (order_id, product_id, line, name, qty, unit_price, amount)
        select id, ${productId}, 0, 'History lamp', 1, 1999, 1999 from placed`;
      await tx`
        insert into api.order_events (order_id, type, at, source, notification_id, detail)
        select id, 'created', created_at, 'api', null, '{}'::jsonb from placed
        union all
        select id, 'paid', created_at + interval '5 seconds', 'webhook', notification_id,
          jsonb_build_object('provider', 'generic', 'payment_ref', notification_id)
        from placed where status in ('paid', 'refunded')
        union all
        select id, 'cancelled', created_at + interval '15 minutes', 'expiry', null,
          '{"reason": "expired"}'::jsonb
        from placed where status = 'cancelled'
        union all
        select id, 'refunded', created_at + interval '1 day', 'manual', null, '{}'::jsonb
        from placed where status = 'refunded'`;
      await tx`
        insert into api.processed_notifications (notification_id, order_id, outcome, processed_at)
        select notification_id, id, 'paid', created_at + interval '5 seconds'
        from placed where status in ('paid', 'refunded')`;
      await tx`
        insert into api.outbox (subject, message_id, payload, created_at, published_at)
        select 'history.orders.paid', 'order-paid-' || id,
          jsonb_build_object('order_id', id, 'status', 'paid', 'amount', 1999, 'currency', 'USD'),
          created_at + interval '5 seconds', created_at + interval '5 seconds'
        from placed where status in ('paid', 'refunded')`;
      if (endpoint)
        await tx`
          insert into api.webhook_deliveries (endpoint_id, event_type, message_id, order_id,
            payload, status, attempts, next_attempt_at, last_status_code, created_at)
          select ${endpoint.id}, 'orders.paid', 'order-paid-' || id, id,
            jsonb_build_object('order_id', id), 'succeeded', 1, created_at + interval '5 seconds',
            204, created_at + interval '5 seconds'
          from placed where status in ('paid', 'refunded')`;
      await tx`
        insert into payments.notifications (id, provider, event, order_id, payment_ref, amount,
          currency, raw_body, received_at, source_ip)
        select notification_id, 'generic', 'payment.succeeded', id, notification_id, 1999, 'USD',
          jsonb_build_object('event', 'payment.succeeded', 'order_id', id, 'amount', 1999,
            'currency', 'USD', 'id', notification_id)::text,
          created_at + interval '5 seconds', '127.0.0.1'
        from placed where status in ('paid', 'refunded')`;
      await tx`
        insert into payments.outbox (subject, message_id, payload, created_at, published_at)
        select 'history.payments.order.paid', notification_id,
          jsonb_build_object('order_id', id, 'amount', 1999, 'currency', 'USD',
            'notification_id', notification_id, 'provider', 'generic',
            'payment_ref', notification_id),
          created_at + interval '5 seconds', created_at + interval '5 seconds'
        from placed where status in ('paid', 'refunded')`;
    });
  }
  await sql`analyze`;
}

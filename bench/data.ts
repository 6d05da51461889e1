/** The bench's data: its catalog, the files the wrk scripts read, signed notifications. */
import { writeFileSync } from "node:fs";
import { signPayload } from "@commerce/shared/contract/signature";
import { signToken } from "@commerce/testing/basics";
import type postgres from "postgres";
import { customers, type Service, say, webhookSecret } from "./harness";
import type { PlacedOrder } from "./order-paid-latency";

export const catalog = { products: 5000, categories: 40, perPage: 20 };
export const categoryNames = Array.from(
  { length: catalog.categories },
  (_, i) => `bench-c${String(i).padStart(2, "0")}`,
);
export const pagesPerCategory = Math.ceil(catalog.products / catalog.categories / catalog.perPage);

/** The bench catalog in its own categories (tests never look there); reused when complete. */
export async function loadCatalog(sql: postgres.Sql): Promise<number[]> {
  const [{ present }] = await sql<{ present: number }[]>`
    select count(*)::int as present from api.products where category = any(${categoryNames})`;
  if (present !== catalog.products) {
    say(`loading the catalog: ${catalog.products} products in ${catalog.categories} categories`);
    await sql.begin(async (tx) => {
      const old = tx`select id from api.products where category = any(${categoryNames})`;
      await tx`delete from api.cart_items where product_id in (${old})`;
      await tx`
        with gone as (
          delete from api.order_items where order_id in
            (select order_id from api.order_items where product_id in (${old}))
          returning order_id), events as (
          delete from api.order_events where order_id in (select order_id from gone))
        delete from api.orders where id in (select order_id from gone)`;
      await tx`delete from api.products where category = any(${categoryNames})`;
      await tx`
        insert into api.products (name, price, category)
        select 'Bench product ' || g, 100 + (g * 7919) % 99900,
               'bench-c' || lpad((g % ${catalog.categories})::text, 2, '0')
        from generate_series(1, ${catalog.products}) as g order by g`;
    });
    await sql`analyze api.products`;
  } else say("reusing the catalog already loaded");
  const rows = await sql<{ id: number }[]>`
    select id from api.products where category = any(${categoryNames}) order by id`;
  return rows.map((r) => r.id);
}

/** tokens.txt (one customer each), ids.txt and categories.txt, as the wrk scripts read them. */
export async function writeDataFiles(dir: string, productIds: number[]): Promise<string[]> {
  const tokens = await Promise.all(
    Array.from({ length: customers }, (_, i) => signToken(`bench-cust-${i}`)),
  );
  writeFileSync(`${dir}/tokens.txt`, `${tokens.join("\n")}\n`);
  writeFileSync(`${dir}/ids.txt`, `${productIds.join("\n")}\n`);
  writeFileSync(`${dir}/categories.txt`, `${categoryNames.join("\n")}\n`);
  return tokens;
}

/** One signed `payment.succeeded` with notification id `id`, paying `order` in full; its status. */
export async function payInFull(
  payments: Service,
  order: { order_id: number; amount: number; currency: string },
  id: string,
): Promise<number> {
  const body = JSON.stringify({
    event: "payment.succeeded",
    order_id: order.order_id,
    amount: order.amount,
    currency: order.currency,
    id,
  });
  const response = await fetch(`${payments.url}/api/webhooks/payment`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-signature": signPayload(body, webhookSecret, Math.floor(Date.now() / 1000)),
    },
    body,
  });
  await response.arrayBuffer();
  return response.status;
}

/**
 * `count` distinct `payment.succeeded` notifications for webhook.lua, one "<X-Signature>\t<body>"
 * line each, signed now (they stay valid for WEBHOOK_TOLERANCE_SECONDS, 300 s by default).
 */
export function writeSignedNotifications(file: string, idPrefix: string, count: number): string {
  const now = Math.floor(Date.now() / 1000);
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const body = JSON.stringify({
      event: "payment.succeeded",
      order_id: 1 + Math.floor(Math.random() * 1_000_000_000),
      amount: 1999,
      currency: "USD",
      id: `${idPrefix}${i}`,
    });
    lines.push(`${signPayload(body, webhookSecret, now)}\t${body}`);
  }
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

/** `count` orders placed by the bench customers, four at a time. */
export async function placeOrders(
  api: Service,
  tokens: string[],
  productIds: number[],
  count: number,
): Promise<PlacedOrder[]> {
  const orders: PlacedOrder[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const response = await fetch(`${api.url}/api/orders`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${tokens[i % tokens.length]}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ product_id: productIds[i % productIds.length], qty: 1 }),
      });
      if (response.status !== 201) throw new Error(`placing an order answered ${response.status}`);
      orders.push((await response.json()) as PlacedOrder);
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return orders;
}

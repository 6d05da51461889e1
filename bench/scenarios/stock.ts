/**
 * The order lifecycle's rows of `npm run bench`: orders on one hot product with tracked stock
 * against one without, checkout, and the race of 1000 one-unit orders for a stock of 10.
 */
import type postgres from "postgres";
import { type Service, say } from "../harness";
import { checkClean, median, summarise, type WrkRun } from "../load";

type Wrk = (target: Service, script: string, args: string[]) => Promise<WrkRun>;

async function benchProduct(sql: postgres.Sql, name: string, stock: number | null) {
  const [row] = await sql<{ id: number }[]>`
    insert into api.products (name, price, category, stock)
    values (${name}, 990, 'bench-hot', ${stock}) returning id`;
  return row.id;
}

/** Orders for one tracked product and for one untracked, in alternating rounds of `wrk`. */
export async function hotProductOrders(
  sql: postgres.Sql,
  api: Service,
  dataDir: string,
  rounds: number,
  wrk: Wrk,
) {
  const tracked = await benchProduct(sql, "hot tracked", 1_000_000);
  const untracked = await benchProduct(sql, "hot untracked", null);
  const runs = { tracked: [] as WrkRun[], untracked: [] as WrkRun[] };
  const ratios: number[] = [];
  await wrk(api, "order-one.lua", [dataDir, String(tracked)]);
  for (let round = 0; round < rounds; round++) {
    const order =
      round % 2 === 0 ? (["tracked", "untracked"] as const) : (["untracked", "tracked"] as const);
    for (const kind of order) {
      const run = await wrk(api, "order-one.lua", [
        dataDir,
        String(kind === "tracked" ? tracked : untracked),
      ]);
      runs[kind].push(run);
      say(`hot product (${kind}) round ${round + 1}: ${run.rps} req/s, p99 ${run.p99_ms} ms`);
    }
    ratios.push(runs.tracked[round].rps / runs.untracked[round].rps);
  }
  checkClean([...runs.tracked, ...runs.untracked], "order-one.lua");
  const [{ stock }] = await sql`select stock from api.products where id = ${tracked}`;
  const [{ ordered }] = await sql`
    select coalesce(sum(qty), 0)::int as ordered from api.order_items where product_id = ${tracked}`;
  return {
    tracked: summarise(runs.tracked),
    untracked: summarise(runs.untracked),
    tracked_over_untracked: median(ratios),
    tracked_over_untracked_each: ratios.map((r) => Math.round(r * 100) / 100),
    // Every unit taken belongs to an order: the stock and the orders agree.
    stock_consistent: 1_000_000 - stock === ordered,
  };
}

const post = (api: Service, path: string, token: string, body?: unknown) =>
  fetch(`${api.url}${path}`, {
    method: body === undefined ? "POST" : "PUT",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

/** POST /api/cart/checkout at `concurrency` in flight for `seconds`, each after filling a cart. */
export async function checkoutRun(
  sql: postgres.Sql,
  api: Service,
  tokens: string[],
  concurrency: number,
  seconds: number,
) {
  const product = await benchProduct(sql, "checkout", null);
  const latencies: number[] = [];
  let failures = 0;
  const until = performance.now() + seconds * 1000;
  let next = 0;
  const worker = async () => {
    while (performance.now() < until) {
      const token = tokens[next++ % tokens.length];
      await (await post(api, `/api/cart/items/${product}`, token, { qty: 2 })).arrayBuffer();
      const started = performance.now();
      const response = await post(api, "/api/cart/checkout", token);
      await response.arrayBuffer();
      if (response.status === 201) latencies.push(performance.now() - started);
      else failures++;
    }
  };
  const startedAt = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - startedAt) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (p: number) =>
    Math.round(latencies[Math.floor((latencies.length - 1) * p)] * 100) / 100;
  return {
    checkouts: latencies.length,
    // Each worker also fills its cart, so this is checkouts per second of that loop.
    checkouts_per_s: Math.round(latencies.length / elapsed),
    p50_ms: at(0.5),
    p99_ms: at(0.99),
    failures,
  };
}

/**
 * A flash sale: 1000 concurrent one-unit orders for a tracked product with `units` left, after
 * one order of it (the api has seen its stock tracked, as in a sale of a product ordered before):
 * exactly `units` may succeed, every other buyer gets 409, the stock ends at 0.
 */
export async function stockRace(sql: postgres.Sql, api: Service, tokens: string[], units = 100) {
  const product = await benchProduct(sql, "race", units + 1);
  const first = await fetch(`${api.url}/api/orders`, {
    method: "POST",
    headers: { authorization: `Bearer ${tokens[0]}`, "content-type": "application/json" },
    body: JSON.stringify({ product_id: product, qty: 1 }),
  });
  if (first.status !== 201) throw new Error(`the sale's first order answered ${first.status}`);
  const startedAt = performance.now();
  const statuses = await Promise.all(
    Array.from({ length: 1000 }, async (_, i) => {
      const response = await fetch(`${api.url}/api/orders`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${tokens[i % tokens.length]}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ product_id: product, qty: 1 }),
      });
      await response.arrayBuffer();
      return response.status;
    }),
  );
  const [{ stock }] = await sql`select stock from api.products where id = ${product}`;
  return {
    units,
    orders: 1000,
    created: statuses.filter((s) => s === 201).length,
    refused_409: statuses.filter((s) => s === 409).length,
    other: statuses.filter((s) => s !== 201 && s !== 409).length,
    stock_left: stock as number,
    ms: Math.round(performance.now() - startedAt),
  };
}

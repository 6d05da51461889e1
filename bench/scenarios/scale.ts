/**
 * The "scale" row of `npm run bench` (P4): list latencies with 10 thousand, 100 thousand and
 * 1 million products and orders, each size in a database of its own (`scale_bench_10k`, …)
 * created beside DATABASE_URL's and reused when already loaded. Alone:
 *
 *   BENCH_ONLY=scale npm run bench     # or: bun bench/scenarios/scale.ts (the api from source)
 *   BENCH_SCALE_SIZES=10000,100000 BENCH_SCALE_REQUESTS=40 bun bench/scenarios/scale.ts
 *
 * Each size has an api process of its own, all running at once. Each query is asked
 * BENCH_SCALE_REQUESTS times (default 25, after 3 warm-up rounds) of each size through its HTTP
 * server, one request at a time, the sizes taking turns, and its p50 and p99 reported with its
 * growth against the smallest size. `bun bench/scenarios/scale-chart.ts <scale.json>` draws docs/scale.svg.
 */
import { writeFileSync } from "node:fs";
import { signToken } from "@commerce/testing/basics";
import postgres from "postgres";
import {
  databaseOnServer,
  launch,
  makeRunDir,
  type Service,
  say,
  serviceCommand,
  serviceEnv,
  stop,
} from "../harness";

const sizes = (process.env.BENCH_SCALE_SIZES ?? "10000,100000,1000000").split(",").map(Number);
const requests = Number(process.env.BENCH_SCALE_REQUESTS ?? 25);
const perPage = 20;

const label = (rows: number) =>
  rows >= 1e6 && rows % 1e6 === 0
    ? `${rows / 1e6}m`
    : rows % 1000 === 0
      ? `${rows / 1000}k`
      : `${rows}`;

/** Half the products in `big`, the rest spread over c0…c99; half the orders by one customer. */
async function load(sql: postgres.Sql, rows: number) {
  const [{ products, orders }] = await sql`
    select (select count(*)::int from api.products) as products,
      (select count(*)::int from api.orders) as orders`;
  if (products === rows && orders === rows) return say(`${label(rows)}: reusing the rows loaded`);
  say(`${label(rows)}: loading ${rows} products and ${rows} orders with one line each`);
  await sql`
    truncate api.order_items, api.order_events, api.refunds, api.orders, api.cart_items, api.products`;
  await sql`
    insert into api.products (name, price, category, stock)
    select 'Product ' || g, 100 + g % 9000,
      case when g % 2 = 0 then 'big' else 'c' || (g % 100) end, null
    from generate_series(1, ${rows}) g`;
  await sql`
    insert into api.orders (customer_id, amount, currency, status, created_at)
    select case when g % 2 = 0 then 'bench-big' else 'bench-c' || (g % 1000) end, 100, 'USD',
      (array['created', 'created', 'paid', 'paid', 'cancelled', 'refunded'])[1 + g % 6],
      now() - make_interval(secs => ${rows} - g)
    from generate_series(1, ${rows}) g`;
  await sql`
    insert into api.order_items (order_id, product_id, line, name, qty, unit_price, amount)
    select id, (select min(id) from api.products) + id % ${rows}, 0, 'Product', 1, 100, 100
    from api.orders`;
}

type Query = { name: string; path: string; token: "admin" | "big" | "small" };

/** Page 1, the middle page and the last page of each list, plus a walk with `after`. */
function queries(rows: number): Query[] {
  const pages = (n: number) => Math.max(1, Math.ceil(n / perPage));
  const three = (name: string, path: string, n: number, token: Query["token"]): Query[] => [
    { name: `${name}, page 1`, path: `${path}page=1`, token },
    { name: `${name}, middle page`, path: `${path}page=${Math.ceil(pages(n) / 2)}`, token },
    { name: `${name}, last page`, path: `${path}page=${pages(n)}`, token },
  ];
  const half = Math.floor(rows / 2);
  return [
    ...three("products", "/api/products?", rows, "admin"),
    ...three("products big (½)", "/api/products?category=big&", half, "admin"),
    ...three("products c7 (1/200)", "/api/products?category=c7&", Math.floor(rows / 200), "admin"),
    ...three("orders, admin", "/api/orders?", rows, "admin"),
    ...three("orders, admin, status=paid (⅓)", "/api/orders?status=paid&", rows / 3, "admin"),
    ...three("orders, customer (½)", "/api/orders?", half, "big"),
    ...three("orders, customer, status=paid", "/api/orders?status=paid&", half / 3, "big"),
    ...three("orders, small customer (1/2000)", "/api/orders?", rows / 2000, "small"),
  ];
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

const summary = (times: number[]) => {
  const sorted = [...times].sort((a, b) => a - b);
  const round = (v: number) => Math.round(v * 100) / 100;
  return { p50_ms: round(percentile(sorted, 50)), p99_ms: round(percentile(sorted, 99)) };
};

type Envelope = { next_after: number | null; total: number };

async function ask(url: string, token: string, target: string) {
  const started = performance.now();
  const response = await fetch(`${url}${target}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const body = (await response.json()) as Envelope;
  if (response.status !== 200) throw new Error(`GET ${target}: ${response.status}`);
  return { ms: performance.now() - started, body };
}

type Target = { url: string; next: () => string; seen?: (body: Envelope) => void };

/**
 * One query against every size, the sizes taking turns request by request, so whatever else
 * runs on the machine meanwhile slows every size alike; 3 warm-up rounds first.
 */
async function interleaved(targets: Target[], token: string) {
  const times = targets.map(() => [] as number[]);
  for (let round = 0; round < 3 + requests; round++)
    for (const [i, target] of targets.entries()) {
      const { ms, body } = await ask(target.url, token, target.next());
      target.seen?.(body);
      if (round >= 3) times[i].push(ms);
    }
  return times.map(summary);
}

/** A walk with `after` from the middle of a list: each request asks for the next page. */
async function walkFrom(url: string, token: string, list: string, middlePage: number) {
  const start = (await ask(url, token, `${list}page=${middlePage}`)).body.next_after;
  let after = start;
  return {
    url,
    next: () => `${list}after=${after}`,
    seen: (body: Envelope) => {
      after = body.next_after ?? start;
    },
  };
}

type Size = { rows: number; api: Service };

/** The size's database, created and loaded unless it already holds the rows; its api started. */
async function prepare(command: string[], rows: number, runDir: string): Promise<Size> {
  const url = new URL(await databaseOnServer(`scale_bench_${label(rows)}`));
  // The api migrates its database at start; the rows go in after.
  const api = await launch(runDir, `api-${label(rows)}`, command, {
    ...serviceEnv(`scale${label(rows)}${process.pid}`),
    DATABASE_URL: url.toString(),
    RATE_LIMIT_RPS: "0",
    LOG_LEVEL: "warn",
  });
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
  try {
    await load(sql, rows);
    say(`${label(rows)}: vacuum analyze (index-only scans need the visibility map)`);
    await sql`vacuum analyze api.products, api.orders, api.list_counts`;
  } finally {
    await sql.end();
  }
  return { rows, api };
}

export type ScaleResults = {
  sizes: number[];
  requests: number;
  queries: { name: string; by_size: { p50_ms: number; p99_ms: number }[] }[];
};

/** Every size at once, one api each; `command` starts the api (binary or source). */
export async function scaleBench(command: string[], runDir: string): Promise<ScaleResults> {
  const prepared: Size[] = [];
  try {
    for (const rows of sizes) prepared.push(await prepare(command, rows, runDir));
    const tokens = {
      admin: await signToken("bench-admin", "admin"),
      big: await signToken("bench-big"),
      small: await signToken("bench-c7"),
    };
    const results: ScaleResults["queries"] = [];
    const perSize = prepared.map((size) => queries(size.rows));
    for (const [q, query] of perSize[0].entries()) {
      const by_size = await interleaved(
        prepared.map((size, i) => ({ url: size.api.url, next: () => perSize[i][q].path })),
        tokens[query.token],
      );
      results.push({ name: query.name, by_size });
      say(`${query.name}: p50 ${by_size.map((s) => s.p50_ms).join(" / ")} ms`);
    }
    const middle = (n: number) => Math.ceil(Math.ceil(n / perPage) / 2);
    for (const [name, list, share] of [
      ["products big (½), after walk from the middle", "/api/products?category=big&", 2],
      ["orders, admin, after walk from the middle", "/api/orders?", 1],
    ] as const) {
      const targets = await Promise.all(
        prepared.map((size) =>
          walkFrom(size.api.url, tokens.admin, list, middle(size.rows / share)),
        ),
      );
      const by_size = await interleaved(targets, tokens.admin);
      results.push({ name, by_size });
      say(`${name}: p50 ${by_size.map((s) => s.p50_ms).join(" / ")} ms`);
    }
    return { sizes, requests, queries: results };
  } finally {
    await Promise.all(prepared.map((size) => stop(size.api)));
  }
}

/** P4's goals: page 1 within 2× of the smallest size, the last page within 5×. */
export function renderScale(r: ScaleResults): string {
  const growth = (q: ScaleResults["queries"][number], i: number) =>
    q.by_size[i].p50_ms / q.by_size[0].p50_ms;
  const goal = (name: string) =>
    name.endsWith("page 1") ? 2 : name.endsWith("last page") || name.includes("after") ? 5 : null;
  const out = [
    `P4 list latency through the api's HTTP server, ${r.requests} requests each, one after another, per_page ${perPage}: p50 ms (p99 ms); growth = p50 against ${label(r.sizes[0])} rows.`,
    "",
    `| query | ${r.sizes.map((s) => `${label(s)} rows`).join(" | ")} | ${r.sizes
      .slice(1)
      .map((s) => `growth ${label(s)}`)
      .join(" | ")} | goal | verdict |`,
    `|---|${r.sizes.map(() => "---:").join("|")}|${r.sizes
      .slice(1)
      .map(() => "---:")
      .join("|")}|---:|---|`,
  ];
  for (const q of r.queries) {
    const limit = goal(q.name);
    const last = growth(q, r.sizes.length - 1);
    out.push(
      `| ${q.name} | ${q.by_size.map((s) => `${s.p50_ms} (${s.p99_ms})`).join(" | ")} | ${r.sizes
        .slice(1)
        .map((_, i) => `${growth(q, i + 1).toFixed(2)}×`)
        .join(" | ")} | ${limit ? `≤ ${limit}×` : "—"} | ${
        limit ? (last <= limit ? "met" : "**missed**") : "grows with the offset"
      } |`,
    );
  }
  return `${out.join("\n")}\n`;
}

if (import.meta.main) {
  const runDir = makeRunDir(`bench-scale-${process.pid}`);
  const results = await scaleBench(
    serviceCommand("api", process.env.BENCH_SOURCES !== "0"),
    runDir,
  );
  writeFileSync(`${runDir}/scale.json`, `${JSON.stringify(results, null, 2)}\n`);
  console.log(renderScale(results));
  say(`results: ${runDir}/scale.json`);
  process.exit(0);
}

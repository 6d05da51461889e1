/**
 * The order rows: POST /api/orders, then the stock rows (./stock.ts): one hot product with its
 * stock tracked and not, checkout, the race of 1000 orders for 100 units (a flash sale).
 *
 *   BENCH_ONLY=orders npm run bench    # only POST /api/orders and the stock rows (~2 min)
 */
import { mode, type Outcome, runDir, runId, settings, sql, startApi, wrk } from "../context";
import { writeDataFiles } from "../data";
import { ms, x } from "../format";
import { readConnections, type Service, say, stop } from "../harness";
import { checkClean, summarise, type WrkRun } from "../load";
import type { Machine } from "../machine";
import { checkoutRun, hotProductOrders, stockRace } from "./stock";

export type Stock = Awaited<ReturnType<typeof measureOrders>>["stock"];
type Summary = ReturnType<typeof summarise>;

/** POST /api/orders, then the stock rows: one hot product, checkout, the race of 1000 for 100 units. */
export async function measureOrders(api: Service, tokens: string[]) {
  const { rounds, seconds } = settings;
  say("POST /api/orders");
  await wrk(api, "order.lua", [runDir], { duration: 2 });
  const orderRuns: WrkRun[] = [];
  for (let round = 0; round < rounds; round++) {
    orderRuns.push(await wrk(api, "order.lua", [runDir]));
    say(
      `order round ${round + 1}: ${orderRuns[round].rps} req/s, p99 ${orderRuns[round].p99_ms} ms`,
    );
  }
  checkClean(orderRuns, "order.lua");

  say("orders on one hot product, stock tracked and not, alternating");
  const hot = await hotProductOrders(sql, api, runDir, rounds, (target, script, args) =>
    wrk(target, script, args),
  );
  say("POST /api/cart/checkout, 32 customers at once");
  const checkout = await checkoutRun(sql, api, tokens, 32, seconds);
  say("flash sale: 1000 concurrent one-unit orders for 100 units");
  const race = await stockRace(sql, api, tokens);
  say(`race: ${race.created} created, ${race.refused_409} refused, stock left ${race.stock_left}`);
  return { orders: orderRuns, stock: { hot, checkout, race } };
}

/** BENCH_ONLY=orders: the order and stock rows alone, to compare one change quickly. */
export async function ordersRow(host: Machine): Promise<Outcome> {
  const { api, productIds } = await startApi();
  const tokens = await writeDataFiles(runDir, productIds);
  const { orders, stock } = await measureOrders(api, tokens);
  await stop(api);
  const results = { run: runId, mode, machine: host, stock };
  const report = [
    `Orders only; services as ${results.mode}; ${settings.rounds} rounds × ${settings.seconds} s; load average at start ${host.load_average_at_start}.`,
    "",
    ...writeRows(summarise(orders), stock),
    "",
    ...stockTables(stock),
    "",
  ].join("\n");
  return {
    files: { "results.json": { ...results, orders }, "results.md": report },
    print: report,
  };
}

export const writeRow = (label: string, connections: number, w: Summary) =>
  `| ${label} | ${connections} | ${w.rps} | ${w.rps_each.join(", ")} | ${ms(w.p50_ms)} | ${ms(w.p99_ms)} | ${w.server_cpu_us} | ${w.postgres_cpu_us} | ${w.nats_cpu_us} | ${w.other_cpu_pct_max} | ${w.errors} / ${w.non2xx} |`;

/** The write table's header and its order rows (the webhook's row follows in the full report). */
export const writeRows = (orders: Summary, stock: Stock) => [
  "| write | connections | req/s (median) | req/s each round | p50 ms | p99 ms | server CPU µs/req | PostgreSQL CPU µs/req | NATS CPU µs/req | other CPU % | errors / non-2xx |",
  "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
  writeRow("POST /api/orders (api)", readConnections, orders),
  writeRow("POST /api/orders, one hot product, stock tracked", readConnections, stock.hot.tracked),
  writeRow(
    "POST /api/orders, one hot product, stock not tracked",
    readConnections,
    stock.hot.untracked,
  ),
];

export const stockTables = ({ checkout, race, hot }: Stock) => [
  `Hot tracked / untracked: ${x(hot.tracked_over_untracked)} (${hot.tracked_over_untracked_each.join(", ")}); stock consistent: ${hot.stock_consistent}.`,
  "",
  "| checkout (after a PUT filling the cart), 32 customers | checkouts | checkouts/s | p50 ms | p99 ms | failures |",
  "|---|---:|---:|---:|---:|---:|",
  `| POST /api/cart/checkout | ${checkout.checkouts} | ${checkout.checkouts_per_s} | ${ms(checkout.p50_ms)} | ${ms(checkout.p99_ms)} | ${checkout.failures} |`,
  "",
  "| race | orders sent at once | 201 | 409 | other | stock left | ms |",
  "|---|---:|---:|---:|---:|---:|---:|",
  `| one-unit orders for ${race.units} units | ${race.orders} | ${race.created} | ${race.refused_409} | ${race.other} | ${race.stock_left} | ${race.ms} |`,
];

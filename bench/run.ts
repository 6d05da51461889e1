/**
 * `npm run bench`: the services side by side with a floor and with Express, on this machine,
 * against the local PostgreSQL and NATS. See docs/benchmarks.md for the method and the goals.
 *
 *   npm run bench                      # compiled binaries (npm run build is run first)
 *   BENCH_SOURCES=1 npm run bench      # the services from source instead
 *   BENCH_SECONDS=8 BENCH_ROUNDS=3 BENCH_LATENCY_COUNT=1000 BENCH_KEEP=1 npm run bench
 *   BENCH_ONLY=orders npm run bench    # only POST /api/orders and the stock rows (~2 min)
 *
 * Each read comparison runs api, floor and Express in alternating rounds within this one process,
 * with the same wrk threads and connections; ratios are taken round by round, then the median.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { messageTopology, orderEventNames, streamsOf } from "@commerce/shared/messages";
import { connect, type NatsConnection } from "nats";
import postgres from "postgres";
import { type BurstResult, consumerLagOf, measureBurst } from "./burst";
import {
  catalog,
  checkClean,
  serviceCommand as command,
  customers,
  databaseUrl,
  ensureWrk,
  findPostmaster,
  jwtSecret,
  launch as launchIn,
  loadCatalog,
  machine,
  makeRunDir,
  median,
  memory,
  natsUrl,
  pagesPerCategory,
  payInFull,
  paymentsEnv,
  readConnections,
  root,
  running,
  type Service,
  say,
  serviceEnv,
  stop,
  summarise,
  threads,
  type WrkRun,
  waitForQuiet,
  writeDataFiles,
  writeSignedNotifications,
  wrk as wrkFor,
} from "./harness";
import { measureOrderPaidLatency, type PlacedOrder } from "./order-paid-latency";
import { renderScale, scaleBench } from "./scale";
import { checkoutRun, hotProductOrders, stockRace } from "./stock";

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const latencyCount = Number(process.env.BENCH_LATENCY_COUNT ?? 1000);
const burstCount = Number(process.env.BENCH_BURST_COUNT ?? 1000);
const burstRounds = 2;
const burstInFlight = 32;
const useSources = process.env.BENCH_SOURCES === "1";
const keepLogs = process.env.BENCH_KEEP === "1";
const ordersOnly = process.env.BENCH_ONLY === "orders";
const webhookConnections = 32;
const startupRuns = 5;

const runId = crypto.randomUUID().replaceAll("-", "").slice(0, 8);
const prefix = { main: `bench${runId}`, webhook: `bench${runId}w`, startup: `bench${runId}s` };
const runDir = makeRunDir(`bench-${runId}`);

const serviceCommand = (name: "api" | "payments") => command(name, useSources);
const launch = (
  name: string,
  commandLine: string[],
  env: Record<string, string>,
  options: { log?: boolean } = {},
) => launchIn(runDir, name, commandLine, env, options);
const wrk = (
  target: Service,
  script: string,
  args: string[],
  { connections = readConnections, duration = seconds } = {},
) => wrkFor(target, script, args, { connections, duration });

// ---- the benchmark -----------------------------------------------------------------------------

const sql = postgres(databaseUrl, { max: 4, onnotice: () => {} });
let nc: NatsConnection | undefined;

async function readComparison(
  targets: Service[],
  script: "product.lua" | "list.lua",
  args: string[],
) {
  say(`${script}: warm-up`);
  for (const target of targets) await wrk(target, script, args, { duration: 3 });
  const runs = new Map<string, WrkRun[]>(targets.map((t) => [t.name, []]));
  const ratios = { floor: [] as number[], express: [] as number[] };
  for (let round = 0; round < rounds; round++) {
    // The order rotates each round, so no target always runs right after another.
    const order = targets.map((_, i) => targets[(i + round) % targets.length]);
    const byName = new Map<string, WrkRun>();
    for (const target of order) {
      const run = await wrk(target, script, args);
      byName.set(target.name, run);
      runs.get(target.name)?.push(run);
      say(`${script} round ${round + 1} ${target.name}: ${run.rps} req/s, p99 ${run.p99_ms} ms`);
    }
    const api = byName.get("api")?.rps ?? Number.NaN;
    ratios.floor.push(api / (byName.get("floor")?.rps ?? Number.NaN));
    ratios.express.push(api / (byName.get("express")?.rps ?? Number.NaN));
  }
  for (const list of runs.values()) checkClean(list, script);
  return {
    targets: [...runs.values()].map(summarise),
    api_over_floor: median(ratios.floor),
    api_over_express: median(ratios.express),
    api_over_floor_each: ratios.floor,
    api_over_express_each: ratios.express,
  };
}

async function webhookRound(payments: Service, label: string, count: number, duration: number) {
  const idPrefix = `bench${runId}${label}-`;
  const file = writeSignedNotifications(`${runDir}/webhook-${label}.txt`, idPrefix, count);
  const run = await wrk(payments, "webhook.lua", [file, String(threads)], {
    connections: webhookConnections,
    duration,
  });
  rmSync(file);
  const [{ stored }] = await sql<{ stored: number }[]>`
    select count(*)::int as stored from payments.notifications where id like ${`${idPrefix}%`}`;
  return { ...run, sent: count, stored };
}

async function binaryStartup(name: "api" | "payments") {
  const readyMs: number[] = [];
  const rssMib: number[] = [];
  const env = name === "api" ? serviceEnv(prefix.startup) : paymentsEnv(prefix.startup);
  for (let i = 0; i < startupRuns; i++) {
    const service = await launch(`${name}-startup`, serviceCommand(name), env, { log: false });
    readyMs.push(service.readyMs);
    await Bun.sleep(200);
    rssMib.push(memory(service.process.pid).rss_mib);
    await stop(service);
  }
  return {
    ready_ms_median: Math.round(median(readyMs)),
    ready_ms_each: readyMs.map(Math.round),
    rss_at_ready_mib: median(rssMib),
  };
}

/** Pays `order` in full with a notification id of this run. */
const pay = (payments: Service, order: PlacedOrder, run: string) =>
  payInFull(payments, order, `bench${runId}${run}-${order.order_id}`);

async function placeOrders(api: Service, tokens: string[], productIds: number[], count: number) {
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

async function cleanUp() {
  say("cleaning up: bench orders, notifications, outbox rows and streams");
  for (const table of ["order_items", "order_events"])
    await sql`delete from ${sql("api")}.${sql(table)} where order_id in
      (select id from api.orders where customer_id like 'bench-cust-%')`;
  await sql`delete from api.orders where customer_id like 'bench-cust-%'`;
  await sql`delete from api.cart_items where customer_id like 'bench-cust-%'`;
  await sql`delete from api.products where category = 'bench-hot'`;
  await sql`delete from api.processed_notifications where notification_id like ${`bench${runId}%`}`;
  await sql`delete from api.payment_reviews where notification_id like ${`bench${runId}%`}`;
  const apiSubjects = Object.values(prefix).flatMap((p) =>
    orderEventNames.map((event) => messageTopology(p).orders.event(event)),
  );
  const paymentSubjects = Object.values(prefix).map((p) => messageTopology(p).payments.orderPaid);
  await sql`delete from api.outbox where subject = any(${apiSubjects})`;
  if (!ordersOnly) {
    await sql`delete from payments.outbox where subject = any(${paymentSubjects})`;
    await sql`delete from payments.notifications where id like ${`bench${runId}%`}`;
  }
  if (nc) {
    const jsm = await nc.jetstreamManager();
    for (const p of Object.values(prefix))
      for (const stream of streamsOf(messageTopology(p)))
        await jsm.streams.delete(stream.name).catch(() => {});
  }
}

/** POST /api/orders, then the stock rows: one hot product, checkout, the race for a stock of 10. */
async function measureOrders(api: Service, tokens: string[]) {
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
  say("1000 concurrent one-unit orders for a stock of 10");
  const race = await stockRace(sql, api, tokens);
  say(`race: ${race.created} created, ${race.refused_409} refused, stock left ${race.stock_left}`);
  return { orders: orderRuns, stock: { hot, checkout, race } };
}

/** BENCH_ONLY=orders: the order and stock rows alone, to compare one change quickly. */
async function ordersAndStock(api: Service, tokens: string[], host: ReturnType<typeof machine>) {
  const { orders, stock } = await measureOrders(api, tokens);
  await stop(api);
  const results = { run: runId, mode: useSources ? "sources" : "binaries", machine: host, stock };
  const report = [
    `Orders only; services as ${results.mode}; ${rounds} rounds × ${seconds} s; load average at start ${host.load_average_at_start}.`,
    "",
    ...writeRows(summarise(orders), stock),
    "",
    ...stockTables(stock),
    "",
  ].join("\n");
  writeFileSync(`${runDir}/results.json`, `${JSON.stringify({ ...results, orders }, null, 2)}\n`);
  writeFileSync(`${runDir}/results.md`, report);
  console.log(report);
}

/** The burst row (M5): `burstRounds` bursts of `burstCount` notifications, each for new orders. */
async function measureBursts(
  api: Service,
  payments: Service,
  tokens: string[],
  productIds: number[],
): Promise<BurstResult[]> {
  if (!nc) throw new Error("nats is not connected");
  say(`burst: ${burstCount} notifications, ${burstInFlight} in flight, ${burstRounds} runs`);
  const jsm = await nc.jetstreamManager();
  const topology = messageTopology(prefix.main);
  const bursts: BurstResult[] = [];
  for (let round = 1; round <= burstRounds; round++) {
    const burstOrders = await placeOrders(api, tokens, productIds, burstCount);
    await waitForQuiet();
    const burst = await measureBurst({
      nc,
      subject: topology.orders.event("paid"),
      orders: burstOrders,
      inFlight: burstInFlight,
      notify: (order) => pay(payments, order, `b${round}`),
      consumerLag: consumerLagOf(jsm, topology),
    });
    bursts.push(burst);
    say(
      `burst ${round}: ${burst.ingest_rps} accepted/s, webhook p99 ${burst.webhook_p99_ms} ms, ` +
        `accepted -> orders.paid p50 ${burst.paid_p50_ms} ms, p99 ${burst.paid_p99_ms} ms, ` +
        `drained ${burst.drained_after_ms} ms after the last 200`,
    );
  }

  return bursts;
}

/** BENCH_ONLY=burst: the burst row alone. */
async function burstOnly(api: Service, tokens: string[], productIds: number[]) {
  const payments = await launch("payments", serviceCommand("payments"), paymentsEnv(prefix.main));
  const bursts = await measureBursts(api, payments, tokens, productIds);
  await Promise.all([stop(api), stop(payments)]);
  const report = [
    ...burstRows(bursts),
    "| goal | target | measured | verdict |",
    "|---|---|---|---|",
    ...burstGoals(bursts),
  ].join("\n");
  writeFileSync(`${runDir}/results.json`, `${JSON.stringify({ run: runId, bursts }, null, 2)}\n`);
  writeFileSync(`${runDir}/results.md`, report);
  console.log(report);
}

async function main() {
  ensureWrk();
  const host = machine();
  say(`run ${runId}; logs and results in ${runDir}`);
  if (!useSources) {
    say("npm run build");
    const build = Bun.spawnSync([process.execPath, "scripts/build.ts"], { cwd: root });
    if (build.exitCode !== 0) throw new Error(`npm run build failed:\n${build.stderr}`);
  }
  if (process.env.BENCH_ONLY === "scale") {
    const scale = await scaleBench(serviceCommand("api"), runDir);
    writeFileSync(`${runDir}/scale.json`, `${JSON.stringify(scale, null, 2)}\n`);
    return console.log(renderScale(scale));
  }
  nc = await connect({ servers: natsUrl });
  await findPostmaster(sql);
  // The test suites leave dead rows behind, and this machine's PostgreSQL runs without
  // autovacuum: without this, each run would measure a more bloated database than the last.
  say("vacuum (analyze)");
  await sql.unsafe("vacuum (analyze)");

  const api = await launch("api", serviceCommand("api"), serviceEnv(prefix.main));
  const productIds = await loadCatalog(sql);
  if (ordersOnly) return ordersAndStock(api, await writeDataFiles(runDir, productIds), host);
  if (process.env.BENCH_ONLY === "burst")
    return burstOnly(api, await writeDataFiles(runDir, productIds), productIds);
  const payments = await launch("payments", serviceCommand("payments"), paymentsEnv(prefix.main));

  say("exec to /ready, 5 starts of each service");
  const startup = { api: await binaryStartup("api"), payments: await binaryStartup("payments") };

  const floor = await launch("floor", [process.execPath, "bench/floor.ts"], {
    DATABASE_URL: databaseUrl,
  });
  const express = await launch("express", ["node", "bench/express.js"], {
    DATABASE_URL: databaseUrl,
    AUTH_JWT_SECRET: jwtSecret,
    NODE_ENV: "production",
  });

  const tokens = await writeDataFiles(runDir, productIds);

  const readTargets = [api, floor, express];
  const product = await readComparison(readTargets, "product.lua", [runDir]);
  const list = await readComparison(readTargets, "list.lua", [runDir, String(pagesPerCategory)]);
  await stop(floor);
  await stop(express);

  const { orders: orderRuns, stock } = await measureOrders(api, tokens);
  const { hot, checkout, race } = stock;

  say("webhook acceptance on a payments process of its own (its messages reach no consumer)");
  const webhookPayments = await launch(
    "payments-webhook",
    serviceCommand("payments"),
    paymentsEnv(prefix.webhook),
  );
  await webhookRound(webhookPayments, "w0", 20_000, 4);
  const webhookRuns = [];
  let expectedRate = 5000;
  for (let round = 1; round <= rounds; round++) {
    const count = Math.max(20_000, Math.ceil(expectedRate * seconds * 2));
    const run = await webhookRound(webhookPayments, `w${round}`, count, seconds);
    expectedRate = run.rps;
    webhookRuns.push(run);
    say(`webhook round ${round}: ${run.rps} req/s, p99 ${run.p99_ms} ms, ${run.stored} stored`);
    if (run.requests > count) say(`WARNING webhook round ${round} ran out of unique notifications`);
  }
  checkClean(webhookRuns, "webhook.lua");
  const webhookMemory = memory(webhookPayments.process.pid);

  say(`accepted -> orders.paid: ${latencyCount} notifications, one after another`);
  const orders = await placeOrders(api, tokens, productIds, latencyCount);
  const latency = await measureOrderPaidLatency({
    nc,
    subject: messageTopology(prefix.main).orders.event("paid"),
    orders,
    notify: (order) => pay(payments, order, "l"),
  });

  const bursts = await measureBursts(api, payments, tokens, productIds);

  const memoryAfter = {
    api: memory(api.process.pid),
    payments: memory(payments.process.pid),
    payments_webhook: webhookMemory,
  };
  // The binaries give memory back once quiet (shared/src/memory-reclaim.ts): the burst's garbage
  // after a second, compiled code after 60 s. Read again at both points.
  const memoryQuiet = async (ms: number) => {
    await Bun.sleep(ms);
    return {
      api: memory(api.process.pid),
      payments: memory(payments.process.pid),
      payments_webhook: memory(webhookPayments.process.pid),
    };
  };
  const memorySettled = { after_3s: await memoryQuiet(3000), after_65s: await memoryQuiet(62_000) };
  const logLines = Object.fromEntries(
    [api, payments, webhookPayments].map((s) => [
      s.name,
      s.log && existsSync(s.log) ? readFileSync(s.log, "utf8").split("\n").length - 1 : 0,
    ]),
  );
  await Promise.all([stop(api), stop(payments), stop(webhookPayments)]);
  say("scale: list latency with 10 thousand to 1 million rows, a database of its own each");
  const scale = await scaleBench(serviceCommand("api"), runDir);

  const results = {
    run: runId,
    at: new Date().toISOString(),
    mode: useSources ? "sources" : "binaries",
    settings: {
      seconds,
      rounds,
      threads,
      read_connections: readConnections,
      webhook_connections: webhookConnections,
      customers,
      ...catalog,
    },
    machine: host,
    reads: { product, list },
    orders: summarise(orderRuns),
    stock: { hot, checkout, race },
    webhook: {
      ...summarise(webhookRuns),
      stored_each: webhookRuns.map((r) => r.stored),
      requests_each: webhookRuns.map((r) => r.requests),
    },
    latency,
    bursts,
    startup,
    memory_after: memoryAfter,
    memory_settled: memorySettled,
    log_lines: logLines,
    scale,
  };
  writeFileSync(`${runDir}/results.json`, `${JSON.stringify(results, null, 2)}\n`);
  const report = `${render(results)}\n${renderScale(scale)}`;
  writeFileSync(`${runDir}/results.md`, report);
  console.log(report);
  say(`results: ${runDir}/results.json and results.md`);
}

// ---- report ------------------------------------------------------------------------------------

type Results = {
  settings: { seconds: number; rounds: number };
  machine: ReturnType<typeof machine>;
  reads: Record<"product" | "list", Awaited<ReturnType<typeof readComparison>>>;
  orders: ReturnType<typeof summarise>;
  stock: {
    hot: Awaited<ReturnType<typeof hotProductOrders>>;
    checkout: Awaited<ReturnType<typeof checkoutRun>>;
    race: Awaited<ReturnType<typeof stockRace>>;
  };
  webhook: ReturnType<typeof summarise>;
  latency: Awaited<ReturnType<typeof measureOrderPaidLatency>>;
  bursts: BurstResult[];
  startup: Record<"api" | "payments", Awaited<ReturnType<typeof binaryStartup>>>;
  memory_after: Record<"api" | "payments" | "payments_webhook", ReturnType<typeof memory>>;
  memory_settled: Record<
    "after_3s" | "after_65s",
    Record<"api" | "payments" | "payments_webhook", ReturnType<typeof memory>>
  >;
  mode: string;
};

const ms = (value: number) => (Number.isNaN(value) ? "-" : value.toFixed(2));
const x = (value: number) => `${value.toFixed(2)}×`;
const verdict = (ok: boolean) => (ok ? "met" : "**missed**");

type Stock = Results["stock"];
type Summary = ReturnType<typeof summarise>;

const writeRow = (label: string, connections: number, w: Summary) =>
  `| ${label} | ${connections} | ${w.rps} | ${w.rps_each.join(", ")} | ${ms(w.p50_ms)} | ${ms(w.p99_ms)} | ${w.server_cpu_us} | ${w.postgres_cpu_us} | ${w.nats_cpu_us} | ${w.other_cpu_pct_max} | ${w.errors} / ${w.non2xx} |`;

/** The write table's header and its order rows (the webhook's row follows in the full report). */
const writeRows = (orders: Summary, stock: Stock) => [
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

const stockTables = ({ checkout, race, hot }: Stock) => [
  `Hot tracked / untracked: ${x(hot.tracked_over_untracked)} (${hot.tracked_over_untracked_each.join(", ")}); stock consistent: ${hot.stock_consistent}.`,
  "",
  "| checkout (after a PUT filling the cart), 32 customers | checkouts | checkouts/s | p50 ms | p99 ms | failures |",
  "|---|---:|---:|---:|---:|---:|",
  `| POST /api/cart/checkout | ${checkout.checkouts} | ${checkout.checkouts_per_s} | ${ms(checkout.p50_ms)} | ${ms(checkout.p99_ms)} | ${checkout.failures} |`,
  "",
  "| race | orders sent at once | 201 | 409 | other | stock left | ms |",
  "|---|---:|---:|---:|---:|---:|---:|",
  `| one-unit orders for stock 10 | ${race.orders} | ${race.created} | ${race.refused_409} | ${race.other} | ${race.stock_left} | ${race.ms} |`,
];

const burstRows = (bursts: BurstResult[]) => [
  `| burst: notifications at once, ${burstInFlight} in flight | run | accepted/s | webhook p50 ms | webhook p99 ms | → orders.paid p50 ms | → orders.paid p99 ms | max ms | backlog max | drained after last 200, ms | lost | non-200 |`,
  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...bursts.map(
    (b, i) =>
      `| ${b.notifications} | ${i + 1} | ${b.ingest_rps} | ${ms(b.webhook_p50_ms)} | ${ms(b.webhook_p99_ms)} | ${ms(b.paid_p50_ms)} | ${ms(b.paid_p99_ms)} | ${ms(b.paid_max_ms)} | ${b.backlog_max} | ${ms(b.drained_after_ms)} | ${b.lost} | ${b.non200} |`,
  ),
  "",
  "Burst backlog (accepted, not yet orders.paid / consumer pending), every 100 ms:",
  "",
  ...bursts.map(
    (b, i) =>
      `- run ${i + 1}: ${b.lag.map(([at, backlog, pending]) => `${at}:${backlog}/${pending}`).join(" ")}`,
  ),
  "",
];

const burstGoals = (bursts: BurstResult[]) => [
  `| burst: accepted → orders.paid p99, each run | ≤ 100 ms | ${bursts.map((b) => `${ms(b.paid_p99_ms)} ms`).join(", ")} | ${verdict(bursts.every((b) => b.paid_p99_ms <= 100 && b.lost === 0))} |`,
  `| burst: backlog at 0 after the last 200, each run | ≤ 1000 ms | ${bursts.map((b) => `${ms(b.drained_after_ms)} ms`).join(", ")} | ${verdict(bursts.every((b) => b.drained_after_ms <= 1000))} |`,
  `| burst: webhook accept p99, each run | ≤ 20 ms | ${bursts.map((b) => `${ms(b.webhook_p99_ms)} ms`).join(", ")} | ${verdict(bursts.every((b) => b.webhook_p99_ms <= 20))} |`,
];

function render(r: Results): string {
  const out: string[] = [];
  const m = r.machine;
  out.push(
    `Machine: ${m.cpus} × ${m.cpu_model}, ${m.memory_gib} GiB; Bun ${m.bun}, Node ${m.node}, ${m.wrk}; ` +
      `services as ${r.mode}; ${r.settings.rounds} rounds × ${r.settings.seconds} s; ` +
      `load average at start ${m.load_average_at_start}.`,
    "",
    "| read | server | req/s (median) | req/s each round | p50 ms | p99 ms | server CPU µs/req | PostgreSQL CPU µs/req | wrk CPU µs/req | other CPU % | errors / non-2xx |",
    "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
  );
  const labels = {
    product: "GET /api/products/{id}",
    list: "GET /api/products?category&page",
  };
  for (const kind of ["product", "list"] as const)
    for (const t of r.reads[kind].targets)
      out.push(
        `| ${labels[kind]} | ${t.target} | ${t.rps} | ${t.rps_each.join(", ")} | ${ms(t.p50_ms)} | ${ms(t.p99_ms)} | ${t.server_cpu_us} | ${t.postgres_cpu_us} | ${t.wrk_cpu_us} | ${t.other_cpu_pct_max} | ${t.errors} / ${t.non2xx} |`,
      );
  out.push(
    "",
    "| read | api / floor (median; each round) | api / Express (median; each round) |",
    "|---|---|---|",
  );
  for (const kind of ["product", "list"] as const) {
    const c = r.reads[kind];
    out.push(
      `| ${labels[kind]} | ${x(c.api_over_floor)} (${c.api_over_floor_each.map((v) => v.toFixed(2)).join(", ")}) | ${x(c.api_over_express)} (${c.api_over_express_each.map((v) => v.toFixed(2)).join(", ")}) |`,
    );
  }
  out.push(
    "",
    ...writeRows(r.orders, r.stock),
    `| POST /api/webhooks/payment (payments), unique signed notifications | ${webhookConnections} | ${r.webhook.rps} | ${r.webhook.rps_each.join(", ")} | ${ms(r.webhook.p50_ms)} | ${ms(r.webhook.p99_ms)} | ${r.webhook.server_cpu_us} | ${r.webhook.postgres_cpu_us} | ${r.webhook.nats_cpu_us} | ${r.webhook.other_cpu_pct_max} | ${r.webhook.errors} / ${r.webhook.non2xx} |`,
    "",
    ...stockTables(r.stock),
    "",
    "| pipeline | notifications | p50 ms | p99 ms | max ms | lost |",
    "|---|---:|---:|---:|---:|---:|",
    `| accepted (200) → orders.paid on NATS | ${r.latency.notifications} | ${ms(r.latency.p50_ms)} | ${ms(r.latency.p99_ms)} | ${ms(r.latency.max_ms)} | ${r.latency.lost} |`,
    "",
    ...burstRows(r.bursts),
    "| binary | exec → /ready median ms (each) | RSS at /ready MiB | RSS right after its load MiB | 3 s later | 65 s later (anon + file) | peak RSS MiB |",
    "|---|---|---:|---:|---:|---:|---:|",
  );
  const rss = (name: "api" | "payments" | "payments_webhook") => {
    const [now, quiet, idle] = [
      r.memory_after[name],
      r.memory_settled.after_3s[name],
      r.memory_settled.after_65s[name],
    ];
    return `${now.rss_mib} | ${quiet.rss_mib} | ${idle.rss_mib} (${idle.anon_mib} + ${idle.file_mib}) | ${Math.max(now.peak_mib, idle.peak_mib)}`;
  };
  out.push(
    `| api | ${r.startup.api.ready_ms_median} (${r.startup.api.ready_ms_each.join(", ")}) | ${r.startup.api.rss_at_ready_mib} | ${rss("api")} |`,
    `| payments (after the webhook load) | ${r.startup.payments.ready_ms_median} (${r.startup.payments.ready_ms_each.join(", ")}) | ${r.startup.payments.rss_at_ready_mib} | ${rss("payments_webhook")} |`,
    `| payments (after the latency run) | | | ${rss("payments")} |`,
  );
  const readsFloor = Math.min(r.reads.product.api_over_floor, r.reads.list.api_over_floor);
  const readsExpress = Math.min(r.reads.product.api_over_express, r.reads.list.api_over_express);
  const readyMax = Math.max(r.startup.api.ready_ms_median, r.startup.payments.ready_ms_median);
  const settled = r.memory_settled.after_65s;
  const rssMax = Math.max(
    settled.api.rss_mib,
    settled.payments.rss_mib,
    settled.payments_webhook.rss_mib,
  );
  out.push(
    "",
    "| goal | target | measured | verdict |",
    "|---|---|---|---|",
    `| api reads vs floor | ≥ 0.80× | product ${x(r.reads.product.api_over_floor)}, list ${x(r.reads.list.api_over_floor)} | ${verdict(readsFloor >= 0.8)} |`,
    `| api reads vs Express | ≥ 3× | product ${x(r.reads.product.api_over_express)}, list ${x(r.reads.list.api_over_express)} | ${verdict(readsExpress >= 3)} |`,
    `| hot tracked product vs untracked, orders/s | ≥ 0.5× | ${x(r.stock.hot.tracked_over_untracked)} (${r.stock.hot.tracked_over_untracked_each.join(", ")}); stock consistent: ${r.stock.hot.stock_consistent} | ${verdict(r.stock.hot.tracked_over_untracked >= 0.5 && r.stock.hot.stock_consistent)} |`,
    `| 1000 orders for stock 10 | exactly 10 | ${r.stock.race.created} created, stock left ${r.stock.race.stock_left} | ${verdict(r.stock.race.created === 10 && r.stock.race.stock_left === 0)} |`,
    `| webhook accept p99, 32 in flight | ≤ 20 ms | ${ms(r.webhook.p99_ms)} ms | ${verdict(r.webhook.p99_ms <= 20)} |`,
    `| accepted → orders.paid p99 | ≤ 50 ms | ${ms(r.latency.p99_ms)} ms | ${verdict(r.latency.p99_ms <= 50 && r.latency.lost === 0)} |`,
    ...burstGoals(r.bursts),
    `| binaries: exec → /ready | ≤ 300 ms | api ${r.startup.api.ready_ms_median} ms, payments ${r.startup.payments.ready_ms_median} ms | ${verdict(readyMax <= 300)} |`,
    `| binaries: resident memory after the run, 65 s quiet (right after the load) | ≤ 80 MB | api ${settled.api.rss_mib} (${r.memory_after.api.rss_mib}) MiB, payments ${Math.max(settled.payments.rss_mib, settled.payments_webhook.rss_mib)} (${Math.max(r.memory_after.payments.rss_mib, r.memory_after.payments_webhook.rss_mib)}) MiB | ${verdict(rssMax * 1.048576 <= 80)} |`,
    "",
  );
  return out.join("\n");
}

const finish = async () => {
  await Promise.all([...running].map(stop));
  await cleanUp().catch((error) => say(`clean-up failed: ${error}`));
  await nc?.close();
  await sql.end({ timeout: 5 });
  if (!keepLogs)
    for (const file of readdirSync(runDir))
      if (file.endsWith(".log") || file.endsWith(".txt")) rmSync(`${runDir}/${file}`);
};

try {
  await main();
  await finish();
} catch (error) {
  console.error(error);
  await finish();
  process.exit(1);
}

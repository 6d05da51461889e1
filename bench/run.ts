/**
 * `npm run bench`: the services side by side with a floor and with Express, on this machine,
 * against the local PostgreSQL and NATS. See docs/benchmarks.md for the method and the goals.
 *
 *   npm run bench                      # compiled binaries (npm run build is run first)
 *   BENCH_SOURCES=1 npm run bench      # the services from source instead
 *   BENCH_SECONDS=8 BENCH_ROUNDS=3 BENCH_LATENCY_COUNT=1000 BENCH_KEEP=1 npm run bench
 *   BENCH_ONLY=orders npm run bench    # only POST /api/orders and the stock rows (~2 min)
 *   BENCH_ONLY=webhooks npm run bench  # only the webhooks row (bench/scenarios/webhooks.ts)
 *   BENCH_ONLY=paced-webhooks npm run bench  # only H10's row: 250/s, a receiver process
 *   BENCH_ONLY=reads npm run bench     # only the read rows, against both floors (~3 min)
 *   BENCH_ONLY=burst npm run bench     # only the burst row
 *   BENCH_ONLY=scrapes npm run bench   # only /metrics: one scrape, 20 scrapers beside reads
 *   BENCH_ONLY=scale npm run bench     # only the scale row (list latency, 10k to 1M rows)
 *   BENCH_ONLY=soak npm run bench      # only the 5-minute soak row (O9; bench/scenarios/soak.ts)
 *   BENCH_ONLY=paid-cost npm run bench     # a paid order's CPU at 50/250/1000 per s (~3 min)
 *   BENCH_ONLY=paid-history npm run bench  # its CPU with 10k/100k/1M orders of history (~8 min)
 *   BENCH_ONLY=money-costs npm run bench   # a refund, a reconciliation run, the anti-entropy check
 *     (~7 min; the run: 10,000 PaymentIntents over 100,000 stored notifications, BENCH_RECONCILE_*)
 *   BENCH_ONLY=paid-sustained npm run bench  # 1,000 paid orders/s for 10 min, open loop (~13 min;
 *     BENCH_SUSTAINED_RATE, _SECONDS, _BUCKET, _DRAIN: e.g. 500/s for 60 s to find what it holds)
 *
 * Every report starts with a durability block (bench/durability.ts): PostgreSQL's
 * synchronous_commit and fsync and JetStream's fsync as the servers ran them, and what the
 * deployment ships that the bench's servers could not run (nats-server 2.9 has no sync_interval).
 *   npm run bench -- report [dir]      # docs/benchmarks.md's current figures from a saved full run
 *
 * A full run (no BENCH_ONLY) also rewrites docs/benchmarks.md's current figures from its results.
 *
 * This file only picks the rows (bench/scenarios/, one file each), runs them, writes what they
 * report into the run's directory and cleans up after them.
 */
import { readdirSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { messageTopology, orderEventNames, streamsOf } from "@commerce/shared/contract/messages";
import { connect } from "nats";
import {
  nats,
  type Outcome,
  only,
  prefix,
  runDir,
  runId,
  serviceCommand,
  setNats,
  settings,
  sql,
} from "./context";
import { lastRunDir, refreshCurrentFigures } from "./current-figures";
import { ensureDatabase, ensureWrk, natsUrl, root, running, say, stop } from "./harness";
import { findPostmaster, type Machine, machine } from "./machine";
import { burstRow } from "./scenarios/bursts";
import { fullRun } from "./scenarios/full";
import { moneyCostsRow } from "./scenarios/money-costs";
import { ordersRow } from "./scenarios/orders";
import { pacedWebhooksRow } from "./scenarios/paced-webhooks";
import { paidCostRow, paidHistoryRow } from "./scenarios/paid-orders";
import { paidSustainedRow } from "./scenarios/paid-sustained";
import { readsRow } from "./scenarios/reads";
import { renderScale, scaleBench } from "./scenarios/scale";
import { scrapesRow } from "./scenarios/scrapes";
import { renderSoak, soakBench } from "./scenarios/soak";
import { webhooksRow } from "./scenarios/webhooks";

/** BENCH_ONLY=scale: needs neither NATS nor the vacuum, each size has a database of its own. */
async function scaleRow(): Promise<Outcome> {
  const scale = await scaleBench(serviceCommand("api"), runDir);
  return { files: { "scale.json": scale }, print: renderScale(scale) };
}

async function soakRow(): Promise<Outcome> {
  const minutes = Number(process.env.BENCH_SOAK_MINUTES ?? 5);
  const soak = await soakBench(runDir, serviceCommand, { minutes, prefix: prefix.soak });
  return { files: { "soak.json": soak }, print: renderSoak(soak, `${runDir}/soak.json`) };
}

/** The rows BENCH_ONLY picks; any other value (or none) runs them all. */
const rows: Record<string, (host: Machine) => Promise<Outcome>> = {
  orders: ordersRow,
  reads: readsRow,
  burst: burstRow,
  soak: soakRow,
  webhooks: webhooksRow,
  "paced-webhooks": pacedWebhooksRow,
  scrapes: scrapesRow,
};

async function main() {
  ensureWrk();
  await ensureDatabase();
  const host = machine();
  say(`run ${runId}; logs and results in ${runDir}`);
  if (!settings.useSources) {
    say("npm run build");
    const build = Bun.spawnSync([process.execPath, "scripts/build.ts"], { cwd: root });
    if (build.exitCode !== 0) throw new Error(`npm run build failed:\n${build.stderr}`);
  }
  if (only === "scale") return report(await scaleRow());
  // Issue 38's rows run on private servers of their own.
  if (only === "paid-cost") return report(await paidCostRow());
  if (only === "paid-history") return report(await paidHistoryRow());
  if (only === "money-costs") return report(await moneyCostsRow());
  if (only === "paid-sustained") return report(await paidSustainedRow());
  setNats(await connect({ servers: natsUrl }));
  await findPostmaster(sql);
  // The test suites leave dead rows behind, and this machine's PostgreSQL runs without
  // autovacuum: without this, each run would measure a more bloated database than the last.
  say("vacuum (analyze)");
  await sql.unsafe("vacuum (analyze)");
  const row = (only && rows[only]) || fullRun;
  report(await withAutovacuum(() => row(host)));
  if (row === fullRun) {
    refreshCurrentFigures(runDir, currentFiguresDoc);
    say(`current figures in ${currentFiguresDoc} rewritten from this run`);
  }
}

const currentFiguresDoc = `${root}/docs/benchmarks.md`;

/** `npm run bench -- report [dir]`: the current figures from a saved full run; measures nothing. */
function reportOnly(dir = lastRunDir()) {
  rmdirSync(runDir); // this invocation's own run directory, made on import and still empty
  if (!dir) throw new Error("no saved full run (a commerce-bench-* directory with results.json)");
  refreshCurrentFigures(dir, currentFiguresDoc);
  say(`current figures in ${currentFiguresDoc} rewritten from ${dir}/results.json`);
}

/**
 * Production runs PostgreSQL with autovacuum (docs/operations.md says it must stay on); this machine's
 * server has it off, and minutes of writes then bloat the tables every read scans, so a soak
 * would measure the missing vacuum, not the services. On for the run, the server's own setting
 * back at the end.
 */
async function withAutovacuum<T>(run: () => Promise<T>): Promise<T> {
  const [{ autovacuum }] = await sql<{ autovacuum: string }[]>`show autovacuum`;
  if (autovacuum === "on") return run();
  say("autovacuum on for this run, as in production (this server has it off)");
  await sql`alter system set autovacuum = on`;
  await sql`select pg_reload_conf()`;
  try {
    return await run();
  } finally {
    await sql`alter system reset autovacuum`;
    await sql`select pg_reload_conf()`;
  }
}

/** The row's files in the run's directory (objects as JSON), and its report on stdout. */
function report({ files, print }: Outcome) {
  for (const [name, content] of Object.entries(files))
    writeFileSync(
      `${runDir}/${name}`,
      typeof content === "string" ? content : `${JSON.stringify(content, null, 2)}\n`,
    );
  console.log(print);
  say(
    `results: ${Object.keys(files)
      .map((name) => `${runDir}/${name}`)
      .join(", ")}`,
  );
}

async function cleanUp() {
  // Issue 38's rows wrote only to private servers, gone with them.
  const privateRows = ["paid-cost", "paid-history", "paid-sustained", "money-costs"];
  if (only && privateRows.includes(only)) return;
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
  if (only !== "orders" && only !== "reads") {
    await sql`delete from payments.outbox where subject = any(${paymentSubjects})`;
    await sql`delete from payments.notifications where id like ${`bench${runId}%`}`;
  }
  const nc = nats();
  if (nc) {
    const jsm = await nc.jetstreamManager();
    for (const p of Object.values(prefix))
      for (const stream of streamsOf(messageTopology(p)))
        await jsm.streams.delete(stream.name).catch(() => {});
  }
}

const finish = async () => {
  await Promise.all([...running].map(stop));
  await cleanUp().catch((error) => say(`clean-up failed: ${error}`));
  await nats()?.close();
  await sql.end({ timeout: 5 });
  if (!settings.keepLogs)
    for (const file of readdirSync(runDir))
      if (file.endsWith(".log") || file.endsWith(".txt")) rmSync(`${runDir}/${file}`);
};

if (process.argv[2] === "report") {
  reportOnly(process.argv[3]);
  await sql.end({ timeout: 5 });
  process.exit(0);
}

try {
  await main();
  await finish();
} catch (error) {
  console.error(error);
  await finish();
  process.exit(1);
}

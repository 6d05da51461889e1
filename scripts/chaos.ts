/**
 * X5: `npm run chaos -- --minutes N [--base 47800] [--seed S] [--report path.md]`: the whole
 * system on loopback (Patroni, a three-node NATS cluster, two api replicas and payments), a
 * steady workload, random SIGKILLs and (v5) pauses of each part and messages lost after
 * JetStream's ack, then a drain and the invariants. Exits 1 on a violation.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { parseArgs } from "node:util";
import { signToken } from "@commerce/testing/basics";
import { startWebhookReceiver } from "@commerce/testing/webhook-receiver";
import postgres from "postgres";
import { AdyenReporting } from "./chaos/adyen-report";
import { ApiClient, runCustomers } from "./chaos/customers";
import { injectFaults, type Kind, kinds } from "./chaos/faults";
import {
  lostPaymentsRepaired,
  noOrderPaidTwice,
  notificationsOnce,
  type ProviderBooks,
  providerStatesReflected,
  refundsSettled,
  reviewsExplained,
  stockConserved,
  webhooksDelivered,
} from "./chaos/invariants";
import { Providers } from "./chaos/provider";
import { seedRandom } from "./chaos/random";
import { markdownReport } from "./chaos/report";
import { Stats } from "./chaos/stats";
import { ChaosSystem } from "./chaos/system";

/** F4: what the local Stripe and Adyen servers hold at the end. */
function providerBooks(system: ChaosSystem): ProviderBooks {
  const payments = new Map<string, number>();
  const stripe = system.stripeApi.refunds().map((r) => ({
    id: r.id,
    paymentRef: r.payment_intent,
    amount: r.amount,
    status: r.status,
    refundId: r.metadata.refund_id,
  }));
  const adyen = system.adyenApi.refunds().map((r) => ({
    id: r.pspReference,
    paymentRef: r.paymentPspReference,
    amount: r.value,
    success: r.success,
  }));
  for (const [ref, amount] of system.stripeApi.payments()) payments.set(ref, amount);
  for (const [ref, amount] of system.adyenApi.payments()) payments.set(ref, amount);
  return { stripe, adyen, payments };
}

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    base: { type: "string", default: "47800" },
    report: { type: "string" },
    seed: { type: "string" },
    /** Only these kinds of fault (comma-separated, as the report names them); default all. */
    faults: { type: "string" },
  },
});
const only = values.faults
  ? values.faults.split(",").map((kind) => {
      if (!kinds.includes(kind.trim() as Kind))
        throw new Error(`--faults: "${kind}" is not one of: ${kinds.join(", ")}`);
      return kind.trim() as Kind;
    })
  : kinds;
const minutes = Number(values.minutes);
// X5 (v5): every choice the run makes comes from this seed, which the report names.
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
seedRandom(seed);
const logDir = `/tmp/chaos-${Date.now()}`;
mkdirSync(logDir, { recursive: true });
const reportPath = values.report ?? `${logDir}/chaos-report.md`;
const log = (line: string) => console.log(`[chaos] ${line}`);

const stats = new Stats();
const system = new ChaosSystem(Number(values.base), logDir);
const receiver = await startWebhookReceiver();
let exitCode = 1;
try {
  log(`starting the system (logs in ${logDir})`);
  await system.start();
  const client = new ApiClient(system, stats);
  const admin = await signToken("chaos-admin", "admin");
  const product = async (stock: number | null, i: number) => {
    const made = await client.call("POST", "/api/products", admin, {
      name: `Chaos ${stock === null ? "plain" : "tracked"} ${i}`,
      price: 1000 + i * 111,
      category: "chaos",
      ...(stock === null ? {} : { stock }),
    });
    if (made.status !== 201)
      throw new Error(`product: ${made.status} ${JSON.stringify(made.json)}`);
    return made.json.id as number;
  };
  const stockPerProduct = Math.max(20, 50 * minutes);
  const tracked = await Promise.all([0, 1, 2].map((i) => product(stockPerProduct, i)));
  const untracked = await Promise.all([3, 4, 5].map((i) => product(null, i)));
  const initial = new Map(tracked.map((id) => [id, stockPerProduct]));
  const endpoint = await client.call("POST", "/api/webhook-endpoints", admin, {
    url: receiver.url,
    events: ["*"],
    description: "chaos receiver",
  });
  if (endpoint.status !== 201)
    throw new Error(`endpoint: ${endpoint.status} ${JSON.stringify(endpoint.json)}`);

  const sql = postgres(system.databaseUrl, { max: 2, onnotice: () => {}, connect_timeout: 3 });
  const lowest = new Map<number, number>();
  let peakLoad = loadavg()[0];
  const workloadStart = Date.now();
  const end = workloadStart + minutes * 60_000;
  const over = () => Date.now() > end;
  const sampler = setInterval(() => {
    peakLoad = Math.max(peakLoad, loadavg()[0]);
    sql`select id, stock from api.products where id = any(${tracked})`
      .then((rows) => {
        for (const r of rows) lowest.set(r.id, Math.min(lowest.get(r.id) ?? r.stock, r.stock));
      })
      .catch(() => {});
  }, 2_000);
  const providers = new Providers(
    system,
    stats,
    (orderId, body) =>
      client.call("POST", `/api/orders/${orderId}/refunds`, admin, body).then((answer) => ({
        status: answer.status,
        json: answer.json ?? {},
      })),
    async (orderId) =>
      (await sql`select status from api.orders where id = ${orderId}`.catch(() => []))[0]?.status,
  );
  const reporting = new AdyenReporting(system, stats);
  reporting.start();
  log(`workload and faults for ${minutes} min`);
  await Promise.all([
    runCustomers({
      client,
      stats,
      tracked,
      untracked,
      until: over,
      pay: (o) => providers.accept(o),
      concurrency: 3,
    }),
    injectFaults(
      system,
      stats,
      over,
      // Short enough that a 10-minute run reaches every kind (each takes up to a minute itself).
      Math.min(45_000, (minutes * 60_000) / (2 * only.length)),
      {
        providers,
        sql,
      },
      only,
    ),
  ]);
  providers.flushPool();
  // B1: the last report, after the workload's last payment was made at Adyen.
  await reporting.stop();
  const workloadSeconds = (Date.now() - workloadStart) / 1000;
  log("draining");
  const drainStart = Date.now();
  while (providers.inFlight > 0 && Date.now() - drainStart < 200_000) await Bun.sleep(500);
  // Settled: every outbox row published, every delivery attempted to the end, every refund the
  // shop asked for succeeded or failed (F3: payments asks again with a back-off that doubles up
  // to 5 min, so a refund caught by the provider outage may take minutes).
  for (let quiet = 0; quiet < 3 && Date.now() - drainStart < 600_000; ) {
    // B2: a message lost after JetStream's ack is published again within 60 s; until then its
    // notification is stored but not processed.
    const [row] = await sql`select
      (select count(*)::int from payments.outbox where published_at is null and dead_at is null) as p,
      (select count(*)::int from api.outbox where published_at is null and dead_at is null) as a,
      (select count(*)::int from api.webhook_deliveries where status = 'pending') as d,
      (select count(*)::int from api.refunds r where r.status in ('requested', 'pending')
        and not exists (select 1 from api.payment_reviews v where v.reason = 'refund_unknown'
          and (v.message->>'refund_id')::bigint = r.id)) as r,
      (select count(*)::int from payments.notifications n where not exists (
        select 1 from api.processed_notifications p where p.notification_id = n.key)
        -- B1: a REPORT_AVAILABLE names a file, not an order: nothing for the api to apply.
        and n.key not like 'adyen:REPORT_AVAILABLE:%') as u`.catch(() => [undefined]);
    quiet = row && row.p + row.a + row.d + row.u + row.r === 0 ? quiet + 1 : 0;
    await Bun.sleep(2_000);
  }
  clearInterval(sampler);
  const drainSeconds = (Date.now() - drainStart) / 1000;
  const verdicts = [
    await notificationsOnce(sql, stats),
    await noOrderPaidTwice(sql),
    await stockConserved(sql, initial, lowest),
    await webhooksDelivered(sql, receiver.received),
    await reviewsExplained(sql, stats),
    await lostPaymentsRepaired(sql, stats),
    await refundsSettled(sql, stats, providerBooks(system)),
    await providerStatesReflected(
      sql,
      stats,
      [
        ...system.stripeApi.paymentList().map((i) => ({
          provider: "Stripe",
          ref: i.id,
          orderId: Number(i.metadata.order_id),
        })),
        ...system.adyenApi.paymentList().map((p) => ({
          provider: "Adyen",
          ref: p.pspReference,
          orderId: Number(p.merchantReference),
        })),
      ],
      [
        ...system.stripeApi.refunds().map((r) => ({ id: r.id, made: r.status === "succeeded" })),
        ...system.adyenApi.refunds().map((r) => ({ id: r.pspReference, made: r.success })),
      ],
    ),
  ];
  const [{ expired }] = await sql`select count(*)::int as expired from api.orders
    where cancel_reason = 'expired'`;
  await sql.end({ timeout: 2 });
  const report = markdownReport(stats, verdicts, {
    minutes,
    seed,
    startedAt: new Date(stats.startedAt),
    workloadSeconds,
    drainSeconds,
    load: loadavg(),
    peakLoad,
    expired,
    cores: cpus().length,
    faults: values.faults,
    notReached: only.filter((kind) => !stats.kindsRun.has(kind)),
  });
  writeFileSync(reportPath, report);
  console.log(`\n${report}`);
  log(`report written to ${reportPath}`);
  exitCode = verdicts.every((v) => v.pass) ? 0 : 1;
} catch (error) {
  console.error("[chaos] the run failed:", error);
} finally {
  await system.stop().catch(() => {});
  await receiver.close();
}
process.exit(exitCode);

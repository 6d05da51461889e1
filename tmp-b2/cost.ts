import { createLogger } from "@commerce/shared/platform/logger";
import { Metrics } from "@commerce/shared/platform/metrics";
import { NatsLink } from "@commerce/shared/platform/nats";
import { testNatsUrl } from "@commerce/testing/basics";
import { startApi, startPayments } from "@commerce/testing/in-process";
import { AppliedAnswerer } from "../services/api/src/modules/payment-inbox/applied-answer";
import { AntiEntropy } from "../services/payments/src/modules/reconciliation/anti-entropy";

const quiet = createLogger("error", {}, () => {});
const api = await startApi();
const payments = await startPayments({ env: { ANTI_ENTROPY_INTERVAL_SECONDS: "0" } });
const nats = new NatsLink(testNatsUrl, "ae-cost", quiet);
await nats.start();
const answerer = new AppliedAnswerer({ sql: api.sql, topology: payments.topology, logger: quiet });
answerer.listen(nats.nc);
const subject = payments.topology.payments.orderPaid;
const history = Number(process.env.HISTORY ?? 1_000_000);
const inWindow = Number(process.env.IN_WINDOW ?? 20_000);
const sql = payments.sql;
let t = performance.now();
await sql`insert into payments.outbox (subject, message_id, payload, published_at)
  select ${subject}, 'h' || g, jsonb_build_object('notification_id', 'cost-h-' || g, 'order_id', 1),
    now() - interval '2 days' - (g || ' seconds')::interval from generate_series(1, ${history}) g`;
await sql`insert into payments.outbox (subject, message_id, payload, published_at)
  select ${subject}, 'w' || g, jsonb_build_object('notification_id', 'cost-w-' || g, 'order_id', 1),
    now() - interval '1 hour' + (g * 0.1 || ' seconds')::interval from generate_series(1, ${inWindow}) g`;
await api.sql`insert into api.processed_notifications (notification_id, order_id, outcome)
  select 'cost-w-' || g, 1, 'paid' from generate_series(11, ${inWindow}) g on conflict do nothing`;
await sql`analyze payments.outbox`;
console.log(`setup ${((performance.now() - t) / 1000).toFixed(1)} s: ${history} rows of history, ${inWindow} in the last hour (10 never applied)`);
const checker = new AntiEntropy({
  sql, nats, topology: payments.topology, logger: quiet, metrics: new Metrics(),
  outboxWritten: () => {}, settings: { intervalMs: 0, windowMs: 24 * 3_600_000, graceMs: 30_000 },
});
t = performance.now();
console.log("first run (whole 24 h window)", await checker.runOnce(), `${(performance.now() - t).toFixed(0)} ms`);
// 10 s of new publications, as between two runs at 100 a second.
await sql`insert into payments.outbox (subject, message_id, payload, published_at)
  select ${subject}, 'n' || g, jsonb_build_object('notification_id', 'cost-n-' || g, 'order_id', 1),
    now() - interval '31 seconds' - (g * 0.01 || ' seconds')::interval from generate_series(1, 1000) g`;
await api.sql`insert into api.processed_notifications (notification_id, order_id, outcome)
  select 'cost-n-' || g, 1, 'paid' from generate_series(1, 1000) g on conflict do nothing`;
for (let i = 0; i < 3; i++) {
  t = performance.now();
  console.log("next run", await checker.runOnce(), `${(performance.now() - t).toFixed(0)} ms`);
}
const plan = await sql.unsafe(`explain (analyze, buffers) select id::text, payload->>'notification_id', published_at::text from payments.outbox
  where published_at is not null and (published_at, id) > (now() - interval '24 hours', 0) and published_at <= now() - interval '30 seconds'
  and subject = any(array['${subject}']) order by outbox.published_at, outbox.id limit 500`);
console.log(plan.map((r: any) => r["QUERY PLAN"]).join("\n"));
await sql`delete from payments.outbox where subject = ${subject}`;
await api.sql`delete from api.processed_notifications where notification_id like 'cost-%'`;
answerer.stop();
await nats.close();
await api.close();
await payments.close();
process.exit(0);

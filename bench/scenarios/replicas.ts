/**
 * Throughput with 1, 2 and 3 api replicas (M4) on this machine, for docs/operations.md's scaling section:
 * product reads and order creation (one wrk per replica at once, the connections split between
 * them, as a load balancer would), and the async path (a burst of notifications paid through one
 * payments process while the replicas share the durable consumer). Runs the compiled binaries:
 *   npm run build && npx bun bench/scenarios/replicas.ts
 */
import { messageTopology } from "@commerce/shared/contract/messages";
import { connect, type JetStreamManager } from "nats";
import postgres from "postgres";
import { consumerLagOf, measureBurst, ordersInTable } from "../burst";
import { loadCatalog, payInFull, writeDataFiles } from "../data";
import {
  serviceCommand as command,
  databaseUrl,
  ensureWrk,
  launch as launchIn,
  makeRunDir,
  natsUrl,
  paymentsEnv,
  readConnections,
  type Service,
  say,
  serviceEnv,
  stop,
} from "../harness";
import { wrk } from "../load";
import { machine } from "../machine";

const seconds = Number(process.env.BENCH_SECONDS ?? 8);
const notifications = 1000;
const runId = crypto.randomUUID().replaceAll("-", "").slice(0, 8);
const runDir = makeRunDir(`replicas-${runId}`);
const sql = postgres(databaseUrl, { max: 4, onnotice: () => {} });

/** All replicas at once, each with its share of the connections; req/s summed. */
async function spread(replicas: Service[], script: string, args: string[]) {
  const connections = Math.max(1, Math.floor(readConnections / replicas.length));
  const runs = await Promise.all(
    replicas.map((replica) => wrk(replica, script, args, { connections, duration: seconds })),
  );
  return {
    rps: runs.reduce((sum, run) => sum + run.rps, 0),
    p99_ms: Math.max(...runs.map((run) => run.p99_ms)),
    errors: runs.reduce((sum, run) => sum + run.errors + run.non2xx, 0),
  };
}

async function main() {
  ensureWrk();
  say(`run ${runId}; logs in ${runDir}`);
  const build = Bun.spawnSync([process.execPath, "scripts/build.ts"]);
  if (build.exitCode !== 0) throw new Error(`npm run build failed:\n${build.stderr}`);
  const nc = await connect({ servers: natsUrl });
  const jsm = await nc.jetstreamManager();
  const productIds = await loadCatalog(sql);
  await writeDataFiles(runDir, productIds);
  const results = [];
  for (const count of [1, 2, 3]) {
    const prefix = `replicas${runId}n${count}`;
    const topology = messageTopology(prefix);
    const replicas: Service[] = [];
    for (let i = 0; i < count; i++)
      replicas.push(
        await launchIn(runDir, `api-${count}-${i}`, command("api"), serviceEnv(prefix)),
      );
    const payments = await launchIn(
      runDir,
      `payments-${count}`,
      command("payments"),
      paymentsEnv(prefix),
    );
    say(`${count} api replica(s): product reads`);
    const reads = await spread(replicas, "product.lua", [runDir]);
    say(`${count} api replica(s): POST /api/orders`);
    const orders = await spread(replicas, "order.lua", [runDir]);

    say(`${count} api replica(s): a burst of ${notifications} notifications`);
    const placed = await ordersInTable(sql, `bench-cust-replicas-${runId}`, notifications);
    const burst = await measureBurst({
      nc,
      subject: topology.orders.event("paid"),
      orders: placed,
      notify: (order) => payInFull(payments, order, `${prefix}b-${order.order_id}`),
      consumerLag: consumerLagOf(jsm, topology),
    });
    const { lag: _, ...figures } = burst;
    results.push({ replicas: count, reads, orders, burst: figures });
    say(JSON.stringify(results.at(-1)));
    await Promise.all([...replicas, payments].map(stop));
    await cleanUp(prefix, jsm);
  }
  await nc.close();
  await sql`delete from api.orders where customer_id like 'bench-cust-%'`;
  await sql.end();

  const m = machine();
  console.log(
    [
      `Machine: ${m.cpus} × ${m.cpu_model}; binaries; ${seconds} s per wrk run; load average at start ${m.load_average_at_start}.`,
      "",
      "| api replicas | GET /api/products/{id} req/s | p99 ms | POST /api/orders req/s | p99 ms | burst: accepted/s | burst → orders.paid p99 ms | drained after last 200 ms |",
      "|---:|---:|---:|---:|---:|---:|---:|---:|",
      ...results.map(
        (r) =>
          `| ${r.replicas} | ${r.reads.rps} | ${r.reads.p99_ms} | ${r.orders.rps} | ${r.orders.p99_ms} | ${r.burst.ingest_rps} | ${r.burst.paid_p99_ms} | ${r.burst.drained_after_ms} |`,
      ),
    ].join("\n"),
  );
}

async function cleanUp(prefix: string, jsm: JetStreamManager) {
  const topology = messageTopology(prefix);
  await sql`delete from api.order_items where order_id in (select id from api.orders where customer_id like 'bench-cust-%')`;
  await sql`delete from api.order_events where order_id in (select id from api.orders where customer_id like 'bench-cust-%')`;
  await sql`delete from api.orders where customer_id like 'bench-cust-%'`;
  await sql`delete from api.processed_notifications where notification_id like ${`${prefix}%`}`;
  await sql`delete from payments.notifications where id like ${`${prefix}%`}`;
  await sql`delete from api.outbox where subject like ${`${prefix}%`}`;
  await sql`delete from payments.outbox where subject like ${`${prefix}%`}`;
  for (const stream of [topology.orders.stream, topology.payments.stream])
    await jsm.streams.delete(stream).catch(() => {});
}

await main();

/**
 * The cost of a paid order (issue 38), measured on a private stack (test/harness/private-stack.ts):
 * orders created beforehand are paid by signed notifications sent on a clock (an open loop: a
 * slow stack does not slow the sender), and the window runs from the first send until every
 * `orders.paid` has come and every webhook delivery of them has been answered. Over the window:
 * CPU of every process from /proc (api, payments, nats-server, every PostgreSQL process), and
 * the servers' own counts: statements (pg_stat_statements), commits and rows (pg_stat_database),
 * WAL records and fsyncs (pg_stat_wal), sequential scans (pg_stat_user_tables), NATS messages
 * (`/varz`). The idle rate, CPU with no traffic, is measured on the same stack just before.
 */
import { readFileSync } from "node:fs";
import type { OrderEvent } from "@commerce/shared/contract/messages";
import { signPayload } from "@commerce/shared/contract/signature";
import { webhookSecret } from "@commerce/testing/basics";
import type { PrivateStack } from "@commerce/testing/private-stack";
import { type PlacedOrder, succeeded } from "@commerce/testing/processes";
import { percentile } from "./order-paid-latency";

type Processes = { api: number; payments: number; nats: number; postgres: number };
const processNames = ["api", "payments", "nats", "postgres"] as const;

export type PaidCost = {
  rate_per_s: number;
  orders: number;
  lost: number;
  window_s: number;
  load_average: string;
  /** CPU per paid order in ms, each process and in all, the idle rate's share taken off. */
  cpu_ms: Processes & { total: number };
  /** The same with the idle rate's share left in. */
  cpu_ms_with_idle: number;
  /** CPU with no traffic, in cores, each process and in all. */
  idle_cores: Processes & { total: number };
  cores_busy: number;
  paid_p50_ms: number;
  paid_p99_ms: number;
  /** Per paid order. */
  statements: number;
  commits: number;
  rows_read: number;
  rows_written: number;
  seq_scans: number;
  seq_rows_read: number;
  seq_scans_by_table: { table: string; scans: number; rows: number }[];
  wal_records: number;
  wal_fsyncs: number;
  nats_messages_in: number;
  nats_messages_out: number;
  /** The statements that ran most per paid order: calls, and PostgreSQL's time in µs. */
  top_statements: { per_order: number; exec_us: number; query: string }[];
};

const hz = 100;

/** The signed `payment.succeeded` (notification id `id`, signed at `at`) that pays `order` in full. */
export function signedPayment(order: PlacedOrder, id: string, at: number) {
  const body = JSON.stringify(succeeded(order, { id }));
  return { body, signature: signPayload(body, webhookSecret, at) };
}
const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

/** `count` unpaid orders of one product, written as placing writes them (items, timeline). */
export async function unpaidOrders(stack: PrivateStack, count: number) {
  const [{ id: productId }] = await stack.sql<{ id: number }[]>`
    insert into api.products (name, price, category) values ('Paid lamp', 1999, 'paid-cost')
    returning id`;
  return stack.sql.begin(async (tx) => {
    const orders = await tx<{ order_id: number; amount: number; currency: string }[]>`
      insert into api.orders (customer_id, amount, currency)
      select 'paid-cost-' || (g % 1000), 1999, 'USD' from generate_series(1, ${count}) as g
      returning id::int as order_id, amount::int as amount, currency`;
    const ids = orders.map((order) => order.order_id);
    await tx`
      insert into api.order_items (order_id, product_id, line, name, qty, unit_price, amount)
      select id, ${productId}, 0, 'Paid lamp', 1, 1999, 1999 from unnest(${ids}::bigint[]) as id`;
    await tx`
      insert into api.order_events (order_id, type, source)
      select id, 'created', 'api' from unnest(${ids}::bigint[]) as id`;
    await tx`analyze api.orders`;
    return orders;
  });
}

/** The servers' own counts and every process's CPU ticks now (a window is two of these). */
export async function counters(stack: PrivateStack) {
  const [database] = await stack.sql<Record<string, string>[]>`
    select xact_commit, tup_returned + tup_fetched as rows_read,
      tup_inserted + tup_updated + tup_deleted as rows_written
    from pg_stat_database where datname = current_database()`;
  const [wal] = await stack.sql<Record<string, string>[]>`
    select wal_records, wal_sync from pg_stat_wal`;
  const tables = await stack.sql<{ name: string; scans: string; rows: string }[]>`
    select schemaname || '.' || relname as name, seq_scan as scans, seq_tup_read as rows
    from pg_stat_user_tables where schemaname in ('api', 'payments')`;
  const statements = await stack.sql<{ calls: string; exec_ms: number; query: string }[]>`
    select calls, total_exec_time as exec_ms, query from pg_stat_statements
    where dbid = (select oid from pg_database where datname = current_database())`;
  const varz = (await (await fetch(`${stack.monitorUrl}/varz`)).json()) as {
    in_msgs: number;
    out_msgs: number;
  };
  return {
    ticks: stack.ticks(),
    at: performance.now(),
    commits: Number(database.xact_commit),
    rowsRead: Number(database.rows_read),
    rowsWritten: Number(database.rows_written),
    walRecords: Number(wal.wal_records),
    walFsyncs: Number(wal.wal_sync),
    seqScans: new Map(
      tables.map((t) => [t.name, { scans: Number(t.scans), rows: Number(t.rows) }]),
    ),
    statements: new Map(
      statements.map((s) => [s.query, { calls: Number(s.calls), execMs: Number(s.exec_ms) }]),
    ),
    natsIn: varz.in_msgs,
    natsOut: varz.out_msgs,
  };
}
export type Counters = Awaited<ReturnType<typeof counters>>;

/** CPU in cores of each process with no traffic at all, over `seconds`. */
export async function idleRate(stack: PrivateStack, seconds: number) {
  const before = stack.ticks();
  const started = performance.now();
  await Bun.sleep(seconds * 1000);
  const after = stack.ticks();
  const elapsed = (performance.now() - started) / 1000;
  const cores = (name: keyof Processes) => (after[name] - before[name]) / hz / elapsed;
  const each = Object.fromEntries(processNames.map((name) => [name, cores(name)])) as Processes;
  return { ...each, total: processNames.reduce((sum, name) => sum + each[name], 0) };
}

/** Pays `orders` at `rate` a second from an open loop; the figures of the window. */
export async function measurePaidCost(
  stack: PrivateStack,
  orders: { order_id: number; amount: number; currency: string }[],
  rate: number,
  idle: Processes & { total: number },
  { tag = "p" } = {},
): Promise<PaidCost> {
  // Signed beforehand, so the sender's clock is not held up by signing.
  const at = Math.floor(Date.now() / 1000);
  const requests = orders.map((order) => signedPayment(order, `${tag}-${order.order_id}`, at));
  const accepted = new Map<number, number>();
  const paidAt = new Map<number, number>();
  const subscription = stack.nc.subscribe(stack.topology.orders.event("paid"));
  void (async () => {
    for await (const message of subscription)
      paidAt.set(message.json<OrderEvent>().order_id, performance.now());
  })();
  await stack.nc.flush();
  const deliveredBefore = stack.delivered();

  const before = await counters(stack);
  const started = performance.now();
  const sent: Promise<void>[] = [];
  for (let i = 0; i < orders.length; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    const order = orders[i];
    sent.push(
      fetch(`${stack.payments.url}/api/webhooks/payment`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-signature": requests[i].signature },
        body: requests[i].body,
      }).then(async (response) => {
        await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`notification answered ${response.status}`);
        accepted.set(order.order_id, performance.now());
      }),
    );
  }
  await Promise.all(sent);
  const deadline = performance.now() + 60_000;
  while (
    performance.now() < deadline &&
    (paidAt.size < orders.length || stack.delivered() - deliveredBefore < orders.length)
  )
    await Bun.sleep(5);
  const after = await counters(stack);
  subscription.unsubscribe();
  return figures(orders, rate, idle, before, after, accepted, paidAt);
}

function figures(
  orders: { order_id: number }[],
  rate: number,
  idle: Processes & { total: number },
  before: Counters,
  after: Counters,
  accepted: Map<number, number>,
  paidAt: Map<number, number>,
): PaidCost {
  const n = orders.length;
  const windowS = (after.at - before.at) / 1000;
  const perOrder = (value: number) => Math.round((value / n) * 100) / 100;
  const cpuMs = (name: keyof Processes) =>
    ((after.ticks[name] - before.ticks[name]) * (1000 / hz) - idle[name] * windowS * 1000) / n;
  const each = Object.fromEntries(
    processNames.map((name) => [name, Math.round(cpuMs(name) * 100) / 100]),
  ) as Processes;
  const total = processNames.reduce((sum, name) => sum + cpuMs(name), 0);
  const latencies = orders
    .flatMap((order) => {
      const paid = paidAt.get(order.order_id);
      const answered = accepted.get(order.order_id);
      return paid !== undefined && answered !== undefined ? [Math.max(0, paid - answered)] : [];
    })
    .sort((a, b) => a - b);
  const calls = [...after.statements].map(([query, now]) => {
    const then = before.statements.get(query) ?? { calls: 0, execMs: 0 };
    return { query, calls: now.calls - then.calls, execMs: now.execMs - then.execMs };
  });
  const statements = calls.reduce((sum, s) => sum + s.calls, 0);
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  const seqScans = [...after.seqScans].map(([table, now]) => {
    const then = before.seqScans.get(table) ?? { scans: 0, rows: 0 };
    return { table, scans: now.scans - then.scans, rows: now.rows - then.rows };
  });
  const round2 = (value: number) => Math.round(value * 100) / 100;
  return {
    rate_per_s: rate,
    orders: n,
    lost: n - paidAt.size,
    window_s: round2(windowS),
    load_average: loadAverage(),
    cpu_ms: { ...each, total: round2(total) },
    cpu_ms_with_idle: round2(total + (idle.total * windowS * 1000) / n),
    idle_cores: Object.fromEntries(
      Object.entries(idle).map(([name, cores]) => [name, Math.round(cores * 1000) / 1000]),
    ) as Processes & { total: number },
    cores_busy: round2((total * n) / 1000 / windowS + idle.total),
    paid_p50_ms: round2(percentile(latencies, 0.5)),
    paid_p99_ms: round2(percentile(latencies, 0.99)),
    statements: perOrder(statements),
    commits: perOrder(after.commits - before.commits),
    rows_read: perOrder(after.rowsRead - before.rowsRead),
    rows_written: perOrder(after.rowsWritten - before.rowsWritten),
    seq_scans: perOrder(sum(seqScans.map((t) => t.scans))),
    seq_rows_read: perOrder(sum(seqScans.map((t) => t.rows))),
    seq_scans_by_table: seqScans
      .filter((t) => t.scans > 0)
      .map((t) => ({ table: t.table, scans: perOrder(t.scans), rows: perOrder(t.rows) })),
    wal_records: perOrder(after.walRecords - before.walRecords),
    wal_fsyncs: perOrder(after.walFsyncs - before.walFsyncs),
    nats_messages_in: perOrder(after.natsIn - before.natsIn),
    nats_messages_out: perOrder(after.natsOut - before.natsOut),
    top_statements: calls
      .filter((s) => s.calls > 0)
      .sort((a, b) => b.execMs - a.execMs)
      .slice(0, 12)
      .map((s) => ({
        per_order: perOrder(s.calls),
        exec_us: Math.round((s.execMs * 1000) / n),
        query: s.query.replace(/\s+/g, " ").slice(0, 140),
      })),
  };
}

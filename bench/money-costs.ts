/**
 * The costs of this round's money work (issue 38, item 6), each measured on a private stack
 * (test/harness/private-stack.ts) whose payments talks to the local Stripe and Adyen API servers
 * (test/harness/providers/, in this process) as STRIPE_API_URL and ADYEN_CHECKOUT_URL:
 *
 * - a refund: orders paid through Stripe's webhook and Adyen's, then refunds asked through the
 *   api's route as an admin asks them (`POST /api/orders/{id}/refunds`), one after another and a
 *   few in flight (Adyen's completes by the REFUND notification its local server sends at once);
 *   from the 202 answer to the api's `orders.refunded` event (the refund `succeeded`), and CPU
 *   per refund of every process from /proc, the idle rate's share taken off;
 * - a reconciliation run: stored notifications written in bulk, Stripe holding the events and
 *   PaymentIntents of the newest of them; one `events` run and one `objects` run (the timer's
 *   next) over the 30-day window of a first run: their time, statements, rows read and payments'
 *   RSS before and after;
 * - the anti-entropy check (B2): per check, on its timer every second, with 200 freshly paid
 *   orders in its window: statements, rows read, PostgreSQL's time and CPU per process.
 *
 * Counts come from the servers (pg_stat_statements, pg_stat_database) as bench/paid-cost.ts
 * takes them; the harness's own polling statements are left out of the statement counts.
 */
import { readFileSync } from "node:fs";
import type { OrderEvent } from "@commerce/shared/contract/messages";
import { signToken } from "@commerce/testing/basics";
import type { PrivateStack } from "@commerce/testing/private-stack";
import {
  adyenBatch,
  adyenItem,
  adyenRequest,
  providersEnv,
  signedItem,
} from "@commerce/testing/provider-requests";
import { startAdyenApi } from "@commerce/testing/providers/adyen-api";
import { type StripeApi, startStripeApi } from "@commerce/testing/providers/stripe-api";
import { percentile } from "./order-paid-latency";
import { type Counters, counters, idleRate, measurePaidCost, unpaidOrders } from "./paid-cost";

type Processes = { api: number; payments: number; nats: number; postgres: number };
const processNames = ["api", "payments", "nats", "postgres"] as const;
const hz = 100;
/** The column every polling statement of the harness names, so the counts leave them out. */
const pollMark = "bench_poll";

export const loadAverage = () =>
  readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const round2 = (value: number) => Math.round(value * 100) / 100;
const rssMiB = (pid: number) => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/);
  return line ? round2(Number(line[1]) / 1024) : Number.NaN;
};

/**
 * The local Stripe and Adyen API servers, and the services' settings that point payments at them.
 * Adyen's REFUND notification is sent as soon as its refund is answered (no delay of its own).
 */
export async function localProviders() {
  const stripeApi = await startStripeApi();
  const adyenApi = await startAdyenApi({ notifyAfterMs: 0 });
  const env = {
    ...providersEnv,
    STRIPE_API_KEY: stripeApi.apiKey,
    STRIPE_API_URL: stripeApi.url,
    ADYEN_API_KEY: adyenApi.apiKey,
    ADYEN_CHECKOUT_URL: adyenApi.checkoutUrl,
  };
  const stop = async () => {
    await stripeApi.stop();
    await adyenApi.stop();
  };
  return { stripeApi, adyenApi, env, stop };
}
export type LocalProviders = Awaited<ReturnType<typeof localProviders>>;

/** What a window cost, divided by `per` (refunds, checks; 1 for a run): servers' counts, CPU. */
function costOf(before: Counters, after: Counters, per: number, idle?: Processes) {
  const windowS = (after.at - before.at) / 1000;
  const cpuMs = (name: keyof Processes) =>
    ((after.ticks[name] - before.ticks[name]) * (1000 / hz) -
      (idle ? idle[name] * windowS * 1000 : 0)) /
    per;
  const cpu = Object.fromEntries(
    processNames.map((name) => [name, round2(cpuMs(name))]),
  ) as Processes;
  const statements = [...after.statements]
    .filter(([query]) => !query.includes(pollMark))
    .map(([query, now]) => {
      const then = before.statements.get(query) ?? { calls: 0, execMs: 0 };
      return { query, calls: now.calls - then.calls, execMs: now.execMs - then.execMs };
    })
    .filter((s) => s.calls > 0);
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  return {
    window_s: round2(windowS),
    cpu_ms: { ...cpu, total: round2(sum(processNames.map(cpuMs))) },
    statements: round2(sum(statements.map((s) => s.calls)) / per),
    postgres_exec_ms: round2(sum(statements.map((s) => s.execMs)) / per),
    rows_read: round2((after.rowsRead - before.rowsRead) / per),
    commits: round2((after.commits - before.commits) / per),
    top_statements: statements
      .sort((a, b) => b.execMs - a.execMs)
      .slice(0, 8)
      .map((s) => ({
        per: round2(s.calls / per),
        exec_us: Math.round((s.execMs * 1000) / per),
        query: s.query.replace(/\s+/g, " ").slice(0, 160),
      })),
  };
}

/** Polls `check` every 50 ms until it answers, or throws after `timeoutMs`. */
async function until<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const found = await check();
    if (found !== undefined) return found;
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await Bun.sleep(50);
  }
}

/** Waits until every order of `ids` is paid in the api. */
async function paidBecome(stack: PrivateStack, ids: number[]) {
  await until("orders paid", 60_000, async () => {
    const [{ paid }] = await stack.sql<{ paid: number }[]>`
      select count(*)::int as paid, 1 as bench_poll from api.orders
      where id = any(${ids}::bigint[]) and status = 'paid'`;
    return paid === ids.length ? true : undefined;
  });
  return ids;
}

/** `count` orders paid through Stripe's webhook (a PaymentIntent the local Stripe holds). */
export async function paidThroughStripe(stack: PrivateStack, stripeApi: StripeApi, count: number) {
  stripeApi.webhookUrl = `${stack.payments.url}/api/webhooks/stripe`;
  const orders = await unpaidOrders(stack, count);
  for (const order of orders) await stripeApi.pay(order.order_id, order.amount, "sent");
  return paidBecome(
    stack,
    orders.map((order) => order.order_id),
  );
}

/** `count` orders paid through Adyen's AUTHORISATION notification (a payment Adyen holds). */
export async function paidThroughAdyen(
  stack: PrivateStack,
  adyenApi: LocalProviders["adyenApi"],
  count: number,
) {
  adyenApi.webhookUrl = `${stack.payments.url}/api/webhooks/adyen`;
  const orders = await unpaidOrders(stack, count);
  for (const order of orders) {
    const payment = adyenApi.payment(order.amount, "USD", order.order_id);
    const item = adyenItem(order.order_id, {
      pspReference: payment.pspReference,
      amount: { currency: "USD", value: order.amount },
    });
    const request = adyenRequest(adyenBatch([signedItem(item)]));
    const response = await fetch(`${stack.payments.url}/api/webhooks/adyen`, {
      method: "POST",
      headers: request.headers,
      body: await request.text(),
    });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`Adyen notification answered ${response.status}`);
  }
  return paidBecome(
    stack,
    orders.map((order) => order.order_id),
  );
}

export type RefundCost = ReturnType<typeof costOf> & {
  provider: string;
  in_flight: number;
  refunds: number;
  lost: number;
  /** From the 202 answer to the api's `orders.refunded` (the refund `succeeded`). */
  succeeded_p50_ms: number;
  succeeded_p99_ms: number;
  /** This process's CPU per refund: the local provider's server and the client asking. */
  bench_cpu_ms: number;
  load_average: string;
};

/**
 * Refunds every order of `orderIds` in full through the api's route, `inFlight` at a time (each
 * asked once the one before it on its lane has succeeded).
 */
export async function measureRefunds(
  stack: PrivateStack,
  provider: string,
  orderIds: number[],
  inFlight: number,
  idle: Processes,
): Promise<RefundCost> {
  const admin = await signToken("bench-admin", "admin");
  const succeededAt = new Map<number, number>();
  const subscription = stack.nc.subscribe(stack.topology.orders.event("refunded"));
  void (async () => {
    for await (const message of subscription) {
      const event = message.json<OrderEvent>();
      if (event.refund_id !== undefined) succeededAt.set(event.refund_id, performance.now());
    }
  })();
  await stack.nc.flush();
  const latencies: number[] = [];
  let lost = 0;
  const refund = async (orderId: number) => {
    const response = await fetch(`${stack.api.url}/api/orders/${orderId}/refunds`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
      body: JSON.stringify({ note: "Bench refund (issue 38)", reason: "requested_by_customer" }),
    });
    const body = (await response.json()) as { refund_id: number };
    if (response.status !== 202)
      throw new Error(`refund answered ${response.status}: ${JSON.stringify(body)}`);
    const answered = performance.now();
    const deadline = answered + 30_000;
    while (!succeededAt.has(body.refund_id) && performance.now() < deadline) await Bun.sleep(1);
    const at = succeededAt.get(body.refund_id);
    if (at === undefined) lost++;
    else latencies.push(Math.max(0, at - answered));
  };
  const queue = [...orderIds];
  const benchCpu = process.cpuUsage();
  const before = await counters(stack);
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) await refund(id);
    }),
  );
  const after = await counters(stack);
  const used = process.cpuUsage(benchCpu);
  subscription.unsubscribe();
  latencies.sort((a, b) => a - b);
  return {
    provider,
    in_flight: inFlight,
    refunds: orderIds.length,
    lost,
    succeeded_p50_ms: round2(percentile(latencies, 0.5)),
    succeeded_p99_ms: round2(percentile(latencies, 0.99)),
    ...costOf(before, after, orderIds.length, idle),
    bench_cpu_ms: round2((used.user + used.system) / 1000 / orderIds.length),
    load_average: loadAverage(),
  };
}

export type ReconciliationCost = ReturnType<typeof costOf> & {
  stored: number;
  /** The newest stored notifications whose events and PaymentIntents Stripe holds. */
  at_stripe: number;
  seed_s: number;
  runs: { kind: string; checked: number; found: number; duration_ms: number }[];
  /** From the first run's start to the last one's end, as the runs' rows say. */
  wall_s: number;
  list_requests: number;
  /** This process's CPU over the runs: mostly the local Stripe server answering the lists. */
  bench_cpu_ms: number;
  payments_rss_mib: { before: number; after: number };
  load_average: string;
};

/**
 * `stored` notifications in payments, the newest `atStripe` of them payments of PaymentIntents
 * the local Stripe holds with their `payment_intent.succeeded` events (never delivered, so only
 * a run lists them), the rest older (spread over 29 days). Stripe is down while they are written,
 * so no run completes before; then one `events` run and one `objects` run, as the timer starts
 * them (RECONCILE_INTERVAL_SECONDS=1), over the first run's window (30 days).
 */
export async function measureReconciliation(
  stack: PrivateStack,
  stripeApi: StripeApi,
  stored: number,
  atStripe: number,
): Promise<ReconciliationCost> {
  stripeApi.down();
  const seeded = performance.now();
  const events: string[] = [];
  const intents: string[] = [];
  const orders: number[] = [];
  for (let order = 1; order <= atStripe; order++) {
    const { intent, event } = await stripeApi.pay(order, 1999, "unsent");
    if (!event) throw new Error("Stripe made no event");
    events.push(event.id);
    intents.push(intent.id);
    orders.push(order);
  }
  const older = stored - atStripe;
  await stack.sql`
    insert into payments.notifications (id, provider, event, order_id, payment_ref, amount,
      currency, raw_body, received_at, source_ip)
    select e, 'stripe', 'payment_intent.succeeded', o, p, 1999, 'USD', '{}', now(), '127.0.0.1'
    from unnest(${events}::text[], ${intents}::text[], ${orders}::bigint[]) as t(e, p, o)`;
  await stack.sql`
    insert into payments.notifications (id, provider, event, order_id, payment_ref, amount,
      currency, raw_body, received_at, source_ip)
    select 'evt_older_' || g, 'stripe', 'payment_intent.succeeded', ${atStripe} + g,
      'pi_older_' || g, 1999, 'USD', '{}',
      now() - make_interval(secs => g * (2505600.0 / greatest(${older}, 1))), '127.0.0.1'
    from generate_series(1, ${older}::int) as g`;
  await stack.sql`analyze payments.notifications`;
  const seedS = round2((performance.now() - seeded) / 1000);
  // The objects run's window ends a second before the events run's (Stripe's whole seconds): a
  // PaymentIntent made in the last second would be the next run's.
  await Bun.sleep(2000);

  const [{ since }] = await stack.sql<{ since: string }[]>`select now()::text as since`;
  const listsBefore = stripeApi.listRequests().length;
  const rssBefore = rssMiB(stack.payments.pid);
  const benchCpu = process.cpuUsage();
  const before = await counters(stack);
  stripeApi.up();
  type Run = { kind: string; checked: number; found: number; duration_ms: number; at: string };
  const runs = await until("a complete events run and objects run", 15 * 60_000, async () => {
    await Bun.sleep(200);
    const done = await stack.sql<(Run & { from: number; to: number })[]>`
      select kind, checked, found, 1 as bench_poll,
        (extract(epoch from finished_at - started_at) * 1000)::float8 as duration_ms,
        extract(epoch from started_at)::float8 as from, extract(epoch from finished_at)::float8 as to
      from payments.reconciliation_runs
      where provider = 'stripe' and started_at > ${since}::timestamptz
        and finished_at is not null and errors = 0
      order by id`;
    const first = (kind: string) => done.find((run) => run.kind === kind);
    const [eventsRun, objectsRun] = [first("events"), first("objects")];
    return eventsRun && objectsRun ? [eventsRun, objectsRun] : undefined;
  });
  const after = await counters(stack);
  const used = process.cpuUsage(benchCpu);
  return {
    stored,
    at_stripe: atStripe,
    seed_s: seedS,
    runs: runs.map(({ kind, checked, found, duration_ms }) => ({
      kind,
      checked,
      found,
      duration_ms: Math.round(duration_ms),
    })),
    wall_s: round2(runs[1].to - runs[0].from),
    list_requests: stripeApi.listRequests().length - listsBefore,
    ...costOf(before, after, 1),
    bench_cpu_ms: round2((used.user + used.system) / 1000),
    payments_rss_mib: { before: rssBefore, after: rssMiB(stack.payments.pid) },
    load_average: loadAverage(),
  };
}

export type AntiEntropyCost = ReturnType<typeof costOf> & {
  history: number;
  seed_s: number;
  checks: number;
  /** Published messages each check compared (its run rows' `checked`). */
  checked_per_check: number;
  load_average: string;
};

/** The anti-entropy check's settings for its row: every second, a grace of one. */
export const antiEntropyEnv = {
  ANTI_ENTROPY_INTERVAL_SECONDS: "1",
  ANTI_ENTROPY_GRACE_SECONDS: "1",
  RECONCILE_INTERVAL_SECONDS: "0",
};

/**
 * The cost of one anti-entropy check (its timer's, every second) on a stack holding `history`
 * orders: 200 orders paid first so each check compares them (they stay in its 60 s overlap),
 * then `checks` consecutive checks, from the end of one to the end of the `checks`-th after it.
 * Per check, everything the stack did in the window: the check, and a second of the stack's
 * idle work beside it (relays' and workers' polls).
 */
export async function measureAntiEntropy(
  stack: PrivateStack,
  history: number,
  seedS: number,
  checks: number,
): Promise<AntiEntropyCost> {
  const none = { api: 0, payments: 0, nats: 0, postgres: 0, total: 0 };
  await measurePaidCost(stack, await unpaidOrders(stack, 200), 100, none, { tag: "ae" });
  await Bun.sleep(1500);
  const lastRun = async () =>
    (
      await stack.sql<{ id: number }[]>`
        select coalesce(max(id), 0)::int as id, 1 as bench_poll from payments.reconciliation_runs
        where kind = 'inbox' and finished_at is not null`
    )[0].id;
  const previous = await lastRun();
  const first = await until("an anti-entropy check", 30_000, async () => {
    const id = await lastRun();
    return id > previous ? id : undefined;
  });
  const before = await counters(stack);
  const last = await until(`${checks} anti-entropy checks`, 60_000, async () => {
    const id = await lastRun();
    return id >= first + checks ? id : undefined;
  });
  const after = await counters(stack);
  const [{ runs, checked }] = await stack.sql<{ runs: number; checked: number }[]>`
    select count(*)::int as runs, avg(checked)::float8 as checked
    from payments.reconciliation_runs where kind = 'inbox' and id > ${first} and id <= ${last}`;
  return {
    history,
    seed_s: seedS,
    checks: runs,
    checked_per_check: round2(checked),
    ...costOf(before, after, runs),
    load_average: loadAverage(),
  };
}

export { idleRate };

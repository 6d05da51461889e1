/**
 * The "burst" row (M5): N unique signed `payment.succeeded` notifications sent `inFlight` at a
 * time, as a sale or a provider's retry of a backlog brings them. Measures the webhook's answers,
 * each notification's time from its 200 to its `orders.paid` message, and the backlog every
 * 100 ms: notifications accepted whose `orders.paid` has not come yet, and the api consumer's
 * own count (pending + unacknowledged). `npm run bench` runs it as one of its phases; alone, it
 * starts its own stack (sources, or the binaries with E2E_BINARIES=1):
 *   npx bun bench/burst.ts [N]
 */
import type { MessageTopology, OrderEvent } from "@commerce/shared/contract/messages";
import type { JetStreamManager, NatsConnection } from "nats";
import type postgres from "postgres";
import { type PlacedOrder, percentile } from "./order-paid-latency";

export type BurstResult = {
  notifications: number;
  in_flight: number;
  /** Notifications answered 200 per second, first request to last answer. */
  ingest_rps: number;
  webhook_p50_ms: number;
  webhook_p99_ms: number;
  non200: number;
  /** From a notification's 200 to its `orders.paid` on NATS. */
  paid_p50_ms: number;
  paid_p99_ms: number;
  paid_max_ms: number;
  lost: number;
  /** From the last 200 until every `orders.paid` had come. */
  drained_after_ms: number;
  /** The largest backlog seen (accepted, not yet `orders.paid`). */
  backlog_max: number;
  /** Every 100 ms from the first request: [ms, accepted - paid, consumer pending]. */
  lag: [number, number, number][];
};

const round = (ms: number) => Math.round(ms * 100) / 100;

/** The api consumer's pending + unacknowledged messages: what the burst samples as its lag. */
export const consumerLagOf = (jsm: JetStreamManager, topology: MessageTopology) => async () => {
  const info = await jsm.consumers.info(topology.payments.stream, topology.paymentEventsConsumer);
  return info.num_pending + info.num_ack_pending;
};

/**
 * `count` orders of `customerId` written straight into the table (no lines, event or timeline),
 * so that a run's profile is the burst's alone.
 */
export const ordersInTable = (sql: postgres.Sql, customerId: string, count: number) => sql<
  PlacedOrder[]
>`
  insert into api.orders (customer_id, amount, currency)
  select ${customerId}, 1000 + n, 'USD' from generate_series(1, ${count}) n
  returning id::int as order_id, amount::int, currency`;

export async function measureBurst({
  nc,
  subject,
  orders,
  notify,
  consumerLag,
  inFlight = 32,
  timeoutMs = 30_000,
}: {
  nc: NatsConnection;
  subject: string;
  orders: PlacedOrder[];
  /** Sends one notification paying `order`; resolves with the HTTP status. */
  notify: (order: PlacedOrder) => Promise<number>;
  /** The api consumer's pending + unacknowledged messages. */
  consumerLag: () => Promise<number>;
  inFlight?: number;
  timeoutMs?: number;
}): Promise<BurstResult> {
  const paidAt = new Map<number, number>();
  const acceptedAt = new Map<number, number>();
  let allPaid: () => void = () => {};
  const everyonePaid = new Promise<void>((resolve) => {
    allPaid = resolve;
  });
  const subscription = nc.subscribe(subject);
  void (async () => {
    for await (const message of subscription) {
      const { order_id } = message.json<OrderEvent>();
      if (!paidAt.has(order_id)) paidAt.set(order_id, performance.now());
      if (paidAt.size === orders.length) allPaid();
    }
  })();
  await nc.flush();

  const started = performance.now();
  const lag: [number, number, number][] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const at = performance.now();
      const pending = await consumerLag().catch(() => -1);
      lag.push([Math.round(at - started), acceptedAt.size - paidAt.size, pending]);
      await Bun.sleep(Math.max(0, 100 - (performance.now() - at)));
    }
  })();

  const webhookMs: number[] = [];
  let non200 = 0;
  let next = 0;
  const sender = async () => {
    while (next < orders.length) {
      const order = orders[next++];
      const sent = performance.now();
      const status = await notify(order);
      const answered = performance.now();
      webhookMs.push(answered - sent);
      if (status === 200) acceptedAt.set(order.order_id, answered);
      else non200++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, sender));
  const lastAnswer = performance.now();

  const timeout = Bun.sleep(timeoutMs);
  await Promise.race([everyonePaid, timeout]);
  const drainedAt = paidAt.size === acceptedAt.size ? Math.max(...paidAt.values()) : Number.NaN;
  await Bun.sleep(300);
  sampling = false;
  await sampler;
  subscription.unsubscribe();

  const paidMs: number[] = [];
  for (const [orderId, accepted] of acceptedAt) {
    const paid = paidAt.get(orderId);
    if (paid !== undefined) paidMs.push(paid - accepted);
  }
  paidMs.sort((a, b) => a - b);
  webhookMs.sort((a, b) => a - b);
  return {
    notifications: orders.length,
    in_flight: inFlight,
    ingest_rps: Math.round(acceptedAt.size / ((lastAnswer - started) / 1000)),
    webhook_p50_ms: round(percentile(webhookMs, 0.5)),
    webhook_p99_ms: round(percentile(webhookMs, 0.99)),
    non200,
    paid_p50_ms: round(percentile(paidMs, 0.5)),
    paid_p99_ms: round(percentile(paidMs, 0.99)),
    paid_max_ms: round(paidMs[paidMs.length - 1] ?? Number.NaN),
    lost: acceptedAt.size - paidMs.length,
    drained_after_ms: round(drainedAt - lastAnswer),
    backlog_max: Math.max(0, ...lag.map(([, backlog]) => backlog)),
    lag,
  };
}

if (import.meta.main) {
  const { startStack, succeeded } = await import("@commerce/testing/processes");
  const { databaseUrl, ensureDatabase } = await import("./harness");
  await ensureDatabase();
  const count = Number(process.argv[2] ?? 1000);
  // The bench's database (DATABASE_URL or `bench`), not the tests'.
  const stack = await startStack({ databaseUrl });
  const nc = stack.nats.nc;
  if (!nc) throw new Error("nats is not connected");
  const orders = await ordersInTable(stack.sql, `burst-${crypto.randomUUID()}`, count);
  const { cpuTicks, findPostmaster, postgresTicks, natsTicks } = await import("./machine");
  await findPostmaster(stack.sql);
  const pids = { api: stack.api.pid, payments: stack.payments.pid };
  const ticks = () => ({
    api: cpuTicks(pids.api),
    payments: cpuTicks(pids.payments),
    postgres: postgresTicks(),
    nats: natsTicks(),
  });
  const before = ticks();
  const jsm = await stack.nats.manager();
  const result = await measureBurst({
    nc,
    subject: stack.topology.orders.event("paid"),
    orders,
    notify: async (order) => (await stack.notify(succeeded(order))).status,
    consumerLag: consumerLagOf(jsm, stack.topology),
  });
  const after = ticks();
  const { lag, ...figures } = result;
  console.log(JSON.stringify(figures));
  const perNotification = Object.fromEntries(
    Object.entries(after).map(([name, t]) => [
      name,
      `${((t - before[name as keyof typeof before]) * 10000) / count} µs`,
    ]),
  );
  console.log("cpu per notification", JSON.stringify(perNotification));
  console.log(lag.map(([at, backlog, pending]) => `${at}:${backlog}/${pending}`).join(" "));
  if (process.env.BURST_OUTPUT) {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(`${process.env.BURST_OUTPUT}-api`, stack.api.output);
    writeFileSync(`${process.env.BURST_OUTPUT}-payments`, stack.payments.output);
  }
  await stack.stop();
}

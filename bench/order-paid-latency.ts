/**
 * Time from a notification's 200 to its `orders.paid` message, over N sequential notifications.
 * `npm run bench` runs it as one of its phases; alone, it starts its own stack (sources, or the
 * binaries with E2E_BINARIES=1):
 *   npx bun bench/order-paid-latency.ts [N]
 */
import type { OrderEvent } from "@commerce/shared/contract/messages";
import type { NatsConnection } from "nats";

export type PlacedOrder = { order_id: number; amount: number; currency: string };

export type LatencyResult = {
  notifications: number;
  lost: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
};

export const percentile = (sorted: number[], q: number) =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/**
 * Pays each order with one `payment.succeeded` notification, one after another, and measures from
 * the 200 to the `orders.paid` message on `subject` (a plain subscription, as a receipt mailer's
 * would be). A message that does not come within `timeoutMs` counts as lost.
 */
export async function measureOrderPaidLatency({
  nc,
  subject,
  orders,
  notify,
  timeoutMs = 10_000,
}: {
  nc: NatsConnection;
  subject: string;
  orders: PlacedOrder[];
  notify: (order: PlacedOrder) => Promise<number>;
  timeoutMs?: number;
}): Promise<LatencyResult> {
  const arrived = new Map<number, number>();
  const waiting = new Map<number, () => void>();
  const subscription = nc.subscribe(subject);
  void (async () => {
    for await (const message of subscription) {
      const { order_id } = message.json<OrderEvent>();
      arrived.set(order_id, performance.now());
      waiting.get(order_id)?.();
    }
  })();
  await nc.flush();

  const latencies: number[] = [];
  let lost = 0;
  for (const order of orders) {
    let timer: Timer | undefined;
    const seen = new Promise<boolean>((resolve) => {
      waiting.set(order.order_id, () => resolve(true));
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    const status = await notify(order);
    const answeredAt = performance.now();
    if (status !== 200)
      throw new Error(`notification for order ${order.order_id} answered ${status}`);
    const came = await seen;
    clearTimeout(timer);
    waiting.delete(order.order_id);
    if (came) latencies.push((arrived.get(order.order_id) ?? answeredAt) - answeredAt);
    else lost++;
  }
  subscription.unsubscribe();

  latencies.sort((a, b) => a - b);
  const round = (ms: number) => Math.round(ms * 100) / 100;
  return {
    notifications: orders.length,
    lost,
    p50_ms: round(percentile(latencies, 0.5)),
    p99_ms: round(percentile(latencies, 0.99)),
    max_ms: round(latencies[latencies.length - 1] ?? Number.NaN),
  };
}

if (import.meta.main) {
  const { startStack, succeeded } = await import("@commerce/testing/processes");
  const { databaseUrl, ensureDatabase } = await import("./harness");
  await ensureDatabase();
  const count = Number(process.argv[2] ?? 100);
  // The bench's database (DATABASE_URL or `bench`), not the tests'.
  const stack = await startStack({ databaseUrl });
  const nc = stack.nats.nc;
  if (!nc) throw new Error("nats is not connected");
  const orders: PlacedOrder[] = [];
  for (let i = 0; i < count; i++) orders.push(await stack.newOrder(1000 + i));
  const result = await measureOrderPaidLatency({
    nc,
    subject: stack.topology.orders.event("paid"),
    orders,
    notify: async (order) => (await stack.notify(succeeded(order))).status,
  });
  console.log(JSON.stringify(result));
  await stack.stop();
}

/**
 * Time from a notification's 200 to its `orders.paid` message, over N sequential notifications,
 * with both services running as real processes (sources, or binaries with E2E_BINARIES=1).
 *   npx bun bench/order-paid-latency.ts [N]
 */
import type { OrdersPaid } from "@commerce/shared/messages";
import { startStack, succeeded } from "../test/e2e/stack";

const count = Number(process.argv[2] ?? 100);
const stack = await startStack();
const nc = stack.nats.nc;
if (!nc) throw new Error("nats is not connected");

const arrived = new Map<number, number>();
const waiting = new Map<number, () => void>();
const subscription = nc.subscribe(stack.topology.orders.paid);
void (async () => {
  for await (const message of subscription) {
    const { order_id } = message.json<OrdersPaid>();
    arrived.set(order_id, performance.now());
    waiting.get(order_id)?.();
  }
})();

const orders = [];
for (let i = 0; i < count; i++) orders.push(await stack.newOrder(1000 + i));

const latencies: number[] = [];
for (const order of orders) {
  const seen = new Promise<void>((resolve) => waiting.set(order.order_id, resolve));
  const response = await stack.notify(succeeded(order));
  const answeredAt = performance.now();
  if (response.status !== 200) throw new Error(`notification answered ${response.status}`);
  await seen;
  latencies.push((arrived.get(order.order_id) ?? answeredAt) - answeredAt);
}

latencies.sort((a, b) => a - b);
const pick = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
console.log(
  JSON.stringify({
    notifications: count,
    p50_ms: +pick(0.5).toFixed(2),
    p99_ms: +pick(0.99).toFixed(2),
    max_ms: +latencies[latencies.length - 1].toFixed(2),
  }),
);
subscription.unsubscribe();
await stack.stop();

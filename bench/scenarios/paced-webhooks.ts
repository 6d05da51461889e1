/**
 * H10's row: notifications at 250 a second, open loop (each sent at its time, whatever the
 * answers before it), paying orders placed just before; one endpoint subscribed to
 * `orders.paid`, served by a receiver in a process of its own (../receiver.ts) that answers 204
 * at once. Measured per order: the notification sent → its `orders.paid` delivery received.
 *
 *   BENCH_ONLY=paced-webhooks BENCH_SOURCES=1 npm run bench
 *   BENCH_PACED_RATE=250 BENCH_PACED_SECONDS=10 (the defaults)
 */
import { signToken } from "@commerce/testing/basics";
import {
  launch,
  type Outcome,
  pay,
  prefix,
  runDir,
  runId,
  serviceCommand,
  sql,
  startApi,
} from "../context";
import { placeOrders, writeDataFiles } from "../data";
import { ms, verdict } from "../format";
import { paymentsEnv, root, type Service, say, serviceEnv, stop } from "../harness";
import { type PlacedOrder, percentile } from "../order-paid-latency";
import { webhookBenchEnv } from "./webhooks";

const rate = Number(process.env.BENCH_PACED_RATE ?? 250);
const seconds = Number(process.env.BENCH_PACED_SECONDS ?? 10);

export type PacedWebhooksResult = {
  rate: number;
  notifications: number;
  /** Notifications answered other than 200. */
  non200: number;
  /** What the sender achieved: sent / (last send - first send). */
  sent_per_s: number;
  /** Notification sent → `orders.paid` delivery received, in ms. */
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  missing: number;
};

/** The receiver process; resolves once it listens. */
async function startReceiver() {
  const child = Bun.spawn([process.execPath, `${root}/bench/receiver.ts`], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = child.stdout.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the receiver exited before listening");
    text += new TextDecoder().decode(value);
  }
  const port = Number(/listening (\d+)/.exec(text)?.[1]);
  const url = `http://127.0.0.1:${port}/`;
  return {
    url,
    arrivals: async () => (await (await fetch(url)).json()) as Record<string, number>,
    stop: () => child.kill(),
  };
}

/** Sends `orders`' notifications at `rate` a second from now; the wall-clock send time of each. */
async function paced(orders: PlacedOrder[], notify: (order: PlacedOrder) => Promise<number>) {
  const sentAt = new Map<number, number>();
  let non200 = 0;
  const answers: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; i < orders.length; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    const order = orders[i];
    sentAt.set(order.order_id, performance.timeOrigin + performance.now());
    answers.push(
      notify(order).then((status) => {
        if (status !== 200) non200++;
      }),
    );
  }
  const sendingMs = performance.now() - start;
  await Promise.all(answers);
  return { sentAt, non200, sent_per_s: Math.round((orders.length * 1000) / sendingMs) };
}

export async function measurePacedWebhooks(
  api: Service,
  payments: Service,
  tokens: string[],
  productIds: number[],
): Promise<PacedWebhooksResult> {
  await sql`delete from api.webhook_endpoints where description = 'bench-h10'`;
  const count = Math.round(rate * seconds);
  say(`paced webhooks: placing ${count} orders`);
  const orders = await placeOrders(api, tokens, productIds, count);
  const receiver = await startReceiver();
  const response = await fetch(`${api.url}/api/webhook-endpoints`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${await signToken("bench-admin", "admin")}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({ url: receiver.url, events: ["orders.paid"], description: "bench-h10" }),
  });
  if (response.status !== 201) throw new Error(`subscribing answered ${response.status}`);
  const { id: endpointId } = (await response.json()) as { id: number };
  try {
    say(`paced webhooks: ${count} notifications at ${rate}/s`);
    const sent = await paced(orders, (order) => pay(payments, order, "h10"));
    const deadline = Date.now() + 60_000;
    let arrived: Record<string, number> = {};
    while (Date.now() < deadline) {
      arrived = await receiver.arrivals();
      if (orders.every((o) => `order-paid-${o.order_id}` in arrived)) break;
      await Bun.sleep(200);
    }
    const times = orders
      .map(
        (o) =>
          (arrived[`order-paid-${o.order_id}`] ?? Number.NaN) - (sent.sentAt.get(o.order_id) ?? 0),
      )
      .filter((t) => !Number.isNaN(t))
      .sort((a, b) => a - b);
    const round = (v: number) => Math.round(v * 10) / 10;
    return {
      rate,
      notifications: count,
      non200: sent.non200,
      sent_per_s: sent.sent_per_s,
      p50_ms: round(percentile(times, 0.5)),
      p99_ms: round(percentile(times, 0.99)),
      max_ms: round(times.at(-1) ?? Number.NaN),
      missing: count - times.length,
    };
  } finally {
    await sql`delete from api.webhook_endpoints where id = ${endpointId}`;
    receiver.stop();
  }
}

export const pacedWebhooksRows = (r: PacedWebhooksResult) => [
  `| H10: ${r.rate} notifications/s open loop (${r.notifications}), receiver process subscribed to orders.paid | sent/s | notification sent → delivery received p50 ms | p99 ms | max ms | missing | non-200 |`,
  "|---|---:|---:|---:|---:|---:|---:|",
  `| | ${r.sent_per_s} | ${ms(r.p50_ms)} | ${ms(r.p99_ms)} | ${ms(r.max_ms)} | ${r.missing} | ${r.non200} |`,
  "",
  "| goal | target | measured | verdict |",
  "|---|---|---|---|",
  `| H10: notification → orders.paid delivery p99 at 250/s | ≤ 500 ms | ${ms(r.p99_ms)} ms | ${verdict(r.p99_ms <= 500 && r.missing === 0 && r.non200 === 0)} |`,
];

/** BENCH_ONLY=paced-webhooks: H10's row alone, on an api allowed to deliver to loopback. */
export async function pacedWebhooksRow(): Promise<Outcome> {
  // The main api migrates the database and loads the catalog; this row needs its own api.
  const started = await startApi();
  await stop(started.api);
  const { productIds } = started;
  const tokens = await writeDataFiles(runDir, productIds);
  const api = await launch("api-h10", serviceCommand("api"), {
    ...serviceEnv(prefix.main),
    ...webhookBenchEnv,
  });
  const payments = await launch("payments", serviceCommand("payments"), paymentsEnv(prefix.main));
  const result = await measurePacedWebhooks(api, payments, tokens, productIds);
  await Promise.all([stop(api), stop(payments)]);
  const report = pacedWebhooksRows(result).join("\n");
  return {
    files: { "results.json": { run: runId, paced_webhooks: result }, "results.md": report },
    print: report,
  };
}

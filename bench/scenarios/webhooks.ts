/**
 * The webhooks row (H2, H5): 1000 orders placed and paid in a burst with no endpoint, then 1000
 * more while three endpoints listen to every order event (two live receivers on loopback, one
 * dead: nothing listens on its port). The order path's figures side by side, and each live
 * endpoint's delivery time of `orders.paid`, from the move's commit (`paid_at`) to its arrival.
 *
 *   BENCH_ONLY=webhooks BENCH_SOURCES=1 npm run bench
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type MessageTopology, messageTopology } from "@commerce/shared/contract/messages";
import { freePort, signToken } from "@commerce/testing/basics";
import type { NatsConnection } from "nats";
import type postgres from "postgres";
import { type BurstResult, consumerLagOf, measureBurst } from "../burst";
import {
  connectedNats,
  launch,
  type Outcome,
  pay,
  prefix,
  runDir,
  runId,
  serviceCommand,
  settings,
  sql,
  startApi,
} from "../context";
import { placeOrders, writeDataFiles } from "../data";
import { paymentsEnv, type Service, say, serviceEnv, stop } from "../harness";
import { type PlacedOrder, percentile } from "../order-paid-latency";

/** The api's settings for this row: receivers on loopback over http. */
export const webhookBenchEnv = { WEBHOOK_ALLOW_HTTP: "1", WEBHOOK_ALLOW_PRIVATE: "1" };

type Context = {
  api: Service;
  payments: Service;
  sql: postgres.Sql;
  nc: NatsConnection;
  topology: MessageTopology;
  adminToken: string;
  count: number;
  placeOrders: (count: number) => Promise<PlacedOrder[]>;
  pay: (order: PlacedOrder, run: string) => Promise<number>;
};

type Phase = { place_ms: number; burst: BurstResult };
type PhaseRun = Phase & { orders: PlacedOrder[] };

export type WebhooksResult = {
  orders: number;
  without: Phase;
  with: Phase;
  /** Per live endpoint: `orders.paid` from the move's commit to the receiver, in ms. */
  delivery: { p50_ms: number; p99_ms: number; max_ms: number; missing: number }[];
};

/** A receiver that answers 204 at once and notes when each `webhook-id` first came. */
async function liveReceiver() {
  const arrived = new Map<string, number>();
  const server = createServer((req, res) => {
    const id = String(req.headers["webhook-id"]);
    if (!arrived.has(id)) arrived.set(id, Date.now());
    req.resume();
    req.on("end", () => {
      res.writeHead(204);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, arrived, close: () => server.close() };
}

async function phase(context: Context, run: string): Promise<PhaseRun> {
  const placing = performance.now();
  const orders = await context.placeOrders(context.count);
  const place_ms = Math.round(performance.now() - placing);
  const burst = await measureBurst({
    nc: context.nc,
    subject: context.topology.orders.event("paid"),
    orders,
    inFlight: 32,
    notify: (order) => context.pay(order, run),
    consumerLag: consumerLagOf(await context.nc.jetstreamManager(), context.topology),
  });
  say(
    `webhooks ${run}: placed ${context.count} in ${place_ms} ms; paid ${burst.ingest_rps}/s, ` +
      `accepted -> orders.paid p99 ${burst.paid_p99_ms} ms`,
  );
  return { place_ms, burst, orders };
}

export async function webhooksBench(context: Context): Promise<WebhooksResult> {
  // A run that died before its clean-up left endpoints that would take deliveries of this one.
  await context.sql`delete from api.webhook_endpoints where description = 'bench'`;
  const without = await phase(context, "w0");

  const live = [await liveReceiver(), await liveReceiver()];
  const dead = `http://127.0.0.1:${await freePort()}/`;
  const endpointIds: number[] = [];
  for (const url of [...live.map((r) => r.url), dead]) {
    const response = await fetch(`${context.api.url}/api/webhook-endpoints`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${context.adminToken}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ url, events: ["*"], description: "bench" }),
    });
    if (response.status !== 201) throw new Error(`subscribing answered ${response.status}`);
    endpointIds.push(((await response.json()) as { id: number }).id);
  }
  try {
    const withEndpoints = await phase(context, "w3");
    const ids = withEndpoints.orders.map((o) => o.order_id);
    const deadline = Date.now() + 120_000;
    while (
      Date.now() < deadline &&
      !live.every((r) => ids.every((id) => r.arrived.has(`order-paid-${id}`)))
    )
      await Bun.sleep(100);
    const paidAt = new Map(
      (
        await context.sql<{ id: number; paid_ms: number }[]>`
          select id::int, (extract(epoch from paid_at) * 1000)::float8 as paid_ms
          from api.orders where id = any(${ids})`
      ).map((row) => [row.id, row.paid_ms]),
    );
    const delivery = live.map((receiver) => {
      const times = ids
        .map(
          (id) => (receiver.arrived.get(`order-paid-${id}`) ?? Number.NaN) - (paidAt.get(id) ?? 0),
        )
        .filter((ms) => !Number.isNaN(ms))
        .sort((a, b) => a - b);
      return {
        p50_ms: Math.round(percentile(times, 0.5)),
        p99_ms: Math.round(percentile(times, 0.99)),
        max_ms: Math.round(times.at(-1) ?? Number.NaN),
        missing: ids.length - times.length,
      };
    });
    const strip = ({ place_ms, burst }: Phase) => ({ place_ms, burst });
    return { orders: context.count, without: strip(without), with: strip(withEndpoints), delivery };
  } finally {
    await context.sql`delete from api.webhook_endpoints where id = any(${endpointIds})`;
    for (const receiver of live) receiver.close();
  }
}

export function webhooksRows(r: WebhooksResult): string[] {
  const row = (label: string, p: Phase) =>
    `| ${label} | ${p.place_ms} | ${p.burst.ingest_rps} | ${p.burst.paid_p50_ms} | ${p.burst.paid_p99_ms} | ${p.burst.lost} |`;
  return [
    `Webhooks: ${r.orders} orders placed (4 at a time) and paid (32 notifications in flight).`,
    "",
    "| endpoints | place all (ms) | paid/s | accepted → orders.paid p50 (ms) | p99 (ms) | lost |",
    "|---|---|---|---|---|---|",
    row("none", r.without),
    row("3 (one dead)", r.with),
    "",
    "| live endpoint | orders.paid commit → received p50 (ms) | p99 (ms) | max (ms) | missing |",
    "|---|---|---|---|---|",
    ...r.delivery.map(
      (d, i) => `| ${i + 1} | ${d.p50_ms} | ${d.p99_ms} | ${d.max_ms} | ${d.missing} |`,
    ),
  ];
}

/** BENCH_ONLY=webhooks: the webhooks row alone, on an api allowed to deliver to loopback. */
export async function webhooksRow(): Promise<Outcome> {
  // The main api migrates the database and the catalog is loaded; this row needs its own api.
  const started = await startApi();
  await stop(started.api);
  const { productIds } = started;
  const tokens = await writeDataFiles(runDir, productIds);
  const env = { ...serviceEnv(prefix.main), ...webhookBenchEnv };
  const api = await launch("api-webhooks", serviceCommand("api"), env);
  const payments = await launch("payments", serviceCommand("payments"), paymentsEnv(prefix.main));
  const result = await webhooksBench({
    api,
    payments,
    sql,
    nc: connectedNats(),
    topology: messageTopology(prefix.main),
    adminToken: await signToken("bench-admin", "admin"),
    count: settings.burstCount,
    placeOrders: (count) => placeOrders(api, tokens, productIds, count),
    pay: (order, run) => pay(payments, order, run),
  });
  await Promise.all([stop(api), stop(payments)]);
  const report = webhooksRows(result).join("\n");
  return {
    files: { "results.json": { run: runId, webhooks: result }, "results.md": report },
    print: report,
  };
}

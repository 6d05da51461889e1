import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { signPayload } from "@commerce/shared/contract/signature";
import { eventually, signToken, webhookSecret } from "@commerce/testing/basics";
import { writePaidHistory } from "@commerce/testing/paid-history";
import {
  harnessApplication,
  type PrivateStack,
  startPrivateStack,
} from "@commerce/testing/private-stack";

/**
 * Issue 38: the cost of a paid order must not grow with the shop's history. A stack of its own
 * (private PostgreSQL and NATS) with a history of orders written as the paid path leaves them;
 * auto_explain writes the plan of every statement the servers run (nested ones too: triggers,
 * functions) as JSON while orders are placed and paid, one by one and in a burst (the consumer's
 * batches), and their `orders.paid` reaches a webhook endpoint. No plan may read a table of the
 * history by a sequential scan: at 5,000 orders (about where the move's join once scanned
 * `api.orders` whole, once per batch; below a few thousand rows the planner may still price a
 * scan of a table that small under an index probe) and at 200,000.
 */
let stack: PrivateStack;
const dir = `/tmp/paid-path-plans-${process.pid}`;

beforeAll(async () => {
  await Bun.$`mkdir -p ${dir}`;
  stack = await startPrivateStack(dir, {
    postgresExtra: {
      shared_preload_libraries: "pg_stat_statements,auto_explain",
      "auto_explain.log_nested_statements": "on",
      "auto_explain.log_format": "json",
      // The application's name on each line: the test's own probes are not the path's.
      log_line_prefix: "'%m [%p] %a: '",
    },
  });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await Bun.$`rm -rf ${dir}`.quiet();
});

const logFile = () => Bun.file(`${stack.pg.dir}/postgres.log`);

const explainEverything = async (on: boolean) => {
  await stack.sql.unsafe(`alter system set auto_explain.log_min_duration = ${on ? 0 : -1}`);
  await stack.sql`select pg_reload_conf()`;
};

const pay = async (order: { order_id: number; amount: number; currency: string }) => {
  const body = JSON.stringify({
    event: "payment.succeeded",
    order_id: order.order_id,
    amount: order.amount,
    currency: order.currency,
    id: `plans-${order.order_id}`,
  });
  const response = await fetch(`${stack.payments.url}/api/webhooks/payment`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-signature": signPayload(body, webhookSecret, Math.floor(Date.now() / 1000)),
    },
    body,
  });
  return response.status;
};

type PlanNode = { "Node Type": string; "Relation Name"?: string; Plans?: PlanNode[] };

/** Every plan auto_explain logged after `from`: its query and each relation it scanned whole. */
async function loggedPlans(from: number): Promise<{ query: string; seqScans: string[] }[]> {
  const log = (await logFile().text()).slice(from);
  const plans: { query: string; seqScans: string[] }[] = [];
  // An entry is "<time> [pid] <application>: LOG:  duration: <ms> ms  plan:" then its JSON, each
  // line after a tab.
  for (const entry of log.split(/\n(?=\S)/)) {
    const start = entry.indexOf("plan:\n");
    if (!entry.includes("LOG:  duration:") || start < 0) continue;
    if (entry.startsWith(harnessApplication, entry.indexOf("] ") + 2)) continue;
    const json = entry
      .slice(start + 6)
      .split("\n")
      .map((line) => line.replace(/^\t/, ""))
      .join("\n");
    const explained = JSON.parse(json) as { "Query Text": string; Plan: PlanNode };
    const seqScans: string[] = [];
    const walk = (node: PlanNode) => {
      if (node["Node Type"] === "Seq Scan" && node["Relation Name"])
        seqScans.push(node["Relation Name"]);
      for (const child of node.Plans ?? []) walk(child);
    };
    walk(explained.Plan);
    plans.push({ query: explained["Query Text"].replace(/\s+/g, " ").trim(), seqScans });
  }
  return plans;
}

/**
 * Places 30 orders and pays them (10 one by one, 20 at once), every plan logged meanwhile; the
 * statements that read a table of more than `bigTable` rows by a sequential scan.
 */
async function scansOfThePaidPath(bigTable: number) {
  const from = logFile().size;
  await explainEverything(true);
  const customer = await signToken("plans-customer");
  const [{ id: productId }] = await stack.sql<{ id: number }[]>`
    select id from api.products where category = 'history'`;
  const place = async () => {
    const response = await fetch(`${stack.api.url}/api/orders`, {
      method: "POST",
      headers: { authorization: `Bearer ${customer}`, "content-type": "application/json" },
      body: JSON.stringify({ product_id: productId, qty: 1 }),
    });
    expect(response.status).toBe(201);
    return (await response.json()) as { order_id: number; amount: number; currency: string };
  };
  const orders = [];
  for (let i = 0; i < 30; i++) orders.push(await place());
  // One by one (each its own group commit, relay round and apply), then 20 at once (batches).
  for (const order of orders.slice(0, 10)) {
    expect(await pay(order)).toBe(200);
    await Bun.sleep(50);
  }
  const statuses = await Promise.all(orders.slice(10).map(pay));
  expect(statuses.every((status) => status === 200)).toBe(true);
  const ids = orders.map((order) => order.order_id);
  await eventually(async () => {
    const [{ paid }] = await stack.sql<{ paid: number }[]>`
      select count(*)::int as paid from api.orders where id = any(${ids}) and status = 'paid'`;
    return paid === ids.length ? true : undefined;
  }, 60_000);
  // Fanned out and delivered: every delivery of these orders succeeded.
  await eventually(async () => {
    const [{ pending }] = await stack.sql<{ pending: number }[]>`
      select count(*)::int as pending from api.webhook_deliveries
      where order_id = any(${ids}) and status <> 'succeeded'`;
    return pending === 0 ? true : undefined;
  }, 60_000);
  await explainEverything(false);

  const big = new Set(
    (
      await stack.sql<{ name: string }[]>`
        select relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname in ('api', 'payments') and c.relkind = 'r' and c.reltuples > ${bigTable}`
    ).map((row) => row.name),
  );
  expect(big.size).toBeGreaterThanOrEqual(8);
  const plans = await loggedPlans(from);
  // The path ran: the consumer's move is among the plans.
  expect(plans.some((plan) => plan.query.includes("update api.orders o set status"))).toBe(true);
  return plans
    .filter((plan) => plan.seqScans.some((table) => big.has(table)))
    .map((plan) => ({
      tables: [...new Set(plan.seqScans.filter((table) => big.has(table)))],
      query: plan.query.slice(0, 300),
    }));
}

describe("the paid path against a long history (issue 38)", () => {
  test("P4: every statement on the paid path uses an index at 5,000 orders", async () => {
    await writePaidHistory(stack.sql, 5_000);
    expect(await scansOfThePaidPath(1_000)).toEqual([]);
  }, 300_000);

  test("P4: every statement on the paid path uses an index at 200,000 orders", async () => {
    await writePaidHistory(stack.sql, 200_000, 5_000);
    expect(await scansOfThePaidPath(10_000)).toEqual([]);
  }, 600_000);
});

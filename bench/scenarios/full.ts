/**
 * `npm run bench` without BENCH_ONLY: every row in one run, on one main stack (api and payments),
 * then the scale and soak rows on processes of their own, then issue 38's rows on private servers
 * (paid cost, paid history, paid sustained); one results.json and results.md, which starts with
 * the main stack's durability block (bench/durability.ts).
 */
import { existsSync, readFileSync } from "node:fs";
import { messageTopology } from "@commerce/shared/contract/messages";
import {
  connectedNats,
  launch,
  mode,
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
import { commitOf } from "../current-figures";
import { catalog, placeOrders, writeDataFiles } from "../data";
import { readDurability } from "../durability";
import {
  customers,
  databaseUrl,
  jwtSecret,
  paymentsEnv,
  readConnections,
  root,
  say,
  stop,
  threads,
} from "../harness";
import { summarise } from "../load";
import { type Machine, memory } from "../machine";
import { measureOrderPaidLatency } from "../order-paid-latency";
import { measureBursts } from "./bursts";
import { moneyCostsRow } from "./money-costs";
import { measureOrders } from "./orders";
import { paidCostRow, paidHistoryRow } from "./paid-orders";
import { paidSustainedRow } from "./paid-sustained";
import { launchFloors, measureReads } from "./reads";
import { render } from "./report";
import { renderScale, scaleBench } from "./scale";
import { renderSoak, soakBench } from "./soak";
import { binaryStartup } from "./startup";
import { measureWebhookIntake } from "./webhook-intake";

export async function fullRun(host: Machine): Promise<Outcome> {
  const nc = connectedNats();
  // The main stack's servers: the machine's PostgreSQL and nats-server (no monitoring port).
  const durability = await readDurability(sql, { version: nc.info?.version ?? "unknown" });
  const { api, productIds } = await startApi();
  const payments = await launch("payments", serviceCommand("payments"), paymentsEnv(prefix.main));

  say("exec to /ready, 5 starts of each service");
  const startup = { api: await binaryStartup("api"), payments: await binaryStartup("payments") };

  const floors = await launchFloors();
  const express = await launch("express", ["node", "bench/express.js"], {
    DATABASE_URL: databaseUrl,
    AUTH_JWT_SECRET: jwtSecret,
    NODE_ENV: "production",
  });

  const tokens = await writeDataFiles(runDir, productIds);

  const reads = await measureReads([api, ...floors, express]);
  for (const server of [...floors, express]) await stop(server);

  const { orders: orderRuns, stock } = await measureOrders(api, tokens);

  say("webhook acceptance on a payments process of its own (its messages reach no consumer)");
  const webhookPayments = await launch(
    "payments-webhook",
    serviceCommand("payments"),
    paymentsEnv(prefix.webhook),
  );
  const webhookRuns = await measureWebhookIntake(webhookPayments);
  const webhookMemory = memory(webhookPayments.pid);

  say(`accepted -> orders.paid: ${settings.latencyCount} notifications, one after another`);
  const latency = await measureOrderPaidLatency({
    nc,
    subject: messageTopology(prefix.main).orders.event("paid"),
    orders: await placeOrders(api, tokens, productIds, settings.latencyCount),
    notify: (order) => pay(payments, order, "l"),
  });

  const bursts = await measureBursts(api, payments, tokens, productIds);

  const memoryAfter = {
    api: memory(api.pid),
    payments: memory(payments.pid),
    payments_webhook: webhookMemory,
  };
  // The binaries give memory back once quiet (shared/src/platform/memory-reclaim.ts): the burst's garbage
  // after a second, compiled code after 60 s. Read again at both points.
  const memoryQuiet = async (ms: number) => {
    await Bun.sleep(ms);
    return {
      api: memory(api.pid),
      payments: memory(payments.pid),
      payments_webhook: memory(webhookPayments.pid),
    };
  };
  const memorySettled = { after_3s: await memoryQuiet(3000), after_65s: await memoryQuiet(62_000) };
  const logLines = Object.fromEntries(
    [api, payments, webhookPayments].map((s) => [
      s.name,
      s.log && existsSync(s.log) ? readFileSync(s.log, "utf8").split("\n").length - 1 : 0,
    ]),
  );
  await Promise.all([stop(api), stop(payments), stop(webhookPayments)]);
  say("scale: list latency with 10 thousand to 1 million rows, a database of its own each");
  const scale = await scaleBench(serviceCommand("api"), runDir);
  say("soak (O9): 5 minutes of steady mixed load on both services");
  const soak = await soakBench(runDir, serviceCommand, { prefix: prefix.soak });
  say("paid orders (issue 38): cost by rate, against the history, sustained; private servers");
  const paid = [await paidCostRow(), await paidHistoryRow(), await paidSustainedRow()];
  say("money costs (issue 38): a refund, a reconciliation run, the anti-entropy check");
  const money = await moneyCostsRow();

  const results = {
    run: runId,
    at: new Date().toISOString(),
    commit: commitOf(root),
    mode,
    settings: {
      seconds: settings.seconds,
      rounds: settings.rounds,
      threads,
      read_connections: readConnections,
      webhook_connections: settings.webhookConnections,
      customers,
      ...catalog,
    },
    machine: host,
    reads,
    orders: summarise(orderRuns),
    stock,
    webhook: {
      ...summarise(webhookRuns),
      stored_each: webhookRuns.map((r) => r.stored),
      requests_each: webhookRuns.map((r) => r.requests),
    },
    latency,
    bursts,
    startup,
    memory_after: memoryAfter,
    memory_settled: memorySettled,
    log_lines: logLines,
    scale,
    soak,
    durability,
  };
  const report = [
    render(results),
    renderScale(scale),
    "",
    renderSoak(soak),
    "",
    ...paid.map((row) => `${row.print}\n`),
    `${money.print}\n`,
  ].join("\n");
  return {
    files: {
      "results.json": results,
      "soak.json": soak,
      "results.md": report,
      ...paid[0].files,
      ...paid[1].files,
      ...paid[2].files,
      ...money.files,
    },
    print: report,
  };
}

/** The full run's report: every row's table and the goals, in markdown. */
import type { BurstResult } from "../burst";
import { type Durability, renderDurability } from "../durability";
import { ms, ratio, verdict, x } from "../format";
import type { summarise } from "../load";
import type { Machine, memory } from "../machine";
import type { LatencyResult } from "../order-paid-latency";
import { burstGoals, burstRows } from "./bursts";
import { type Stock, stockTables, writeRows } from "./orders";
import type { ReadComparison } from "./reads";
import type { Startup } from "./startup";

type Memory = Record<"api" | "payments" | "payments_webhook", ReturnType<typeof memory>>;

export type Results = {
  settings: { seconds: number; rounds: number; webhook_connections: number };
  machine: Machine;
  reads: Record<"product" | "list", ReadComparison>;
  orders: ReturnType<typeof summarise>;
  stock: Stock;
  webhook: ReturnType<typeof summarise>;
  latency: LatencyResult;
  bursts: BurstResult[];
  startup: Record<"api" | "payments", Startup>;
  memory_after: Memory;
  memory_settled: Record<"after_3s" | "after_65s", Memory>;
  mode: string;
  /** What the main stack's PostgreSQL and NATS ran (absent in runs saved before issue 38). */
  durability?: Durability;
};

export function render(r: Results): string {
  const out: string[] = [];
  const m = r.machine;
  if (r.durability)
    out.push(
      renderDurability(r.durability),
      "(Issue 38's rows at the end run on private servers of their own: each says what it ran.)",
      "",
    );
  out.push(
    `Machine: ${m.cpus} × ${m.cpu_model}, ${m.memory_gib} GiB; Bun ${m.bun}, Node ${m.node}, ${m.wrk}; ` +
      `services as ${r.mode}; ${r.settings.rounds} rounds × ${r.settings.seconds} s; ` +
      `load average at start ${m.load_average_at_start}.`,
    "",
    "| read | server | req/s (median) | req/s each round | p50 ms | p99 ms | server CPU µs/req | PostgreSQL CPU µs/req | wrk CPU µs/req | other CPU % | errors / non-2xx |",
    "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
  );
  const labels = {
    product: "GET /api/products/{id}",
    list: "GET /api/products?category&page",
  };
  for (const kind of ["product", "list"] as const)
    for (const t of r.reads[kind].targets)
      out.push(
        `| ${labels[kind]} | ${t.target} | ${t.rps} | ${t.rps_each.join(", ")} | ${ms(t.p50_ms)} | ${ms(t.p99_ms)} | ${t.server_cpu_us} | ${t.postgres_cpu_us} | ${t.wrk_cpu_us} | ${t.other_cpu_pct_max} | ${t.errors} / ${t.non2xx} |`,
      );
  out.push(
    "",
    "| read | api / floor (median; each round) | api / Bun-SQL floor (median; each round) | api / Express (median; each round) |",
    "|---|---|---|---|",
  );
  for (const kind of ["product", "list"] as const) {
    const c = r.reads[kind];
    out.push(
      `| ${labels[kind]} | ${ratio(c.api_over_floor, c.api_over_floor_each)} | ${ratio(c.api_over_floor_bun, c.api_over_floor_bun_each)} | ${ratio(c.api_over_express, c.api_over_express_each)} |`,
    );
  }
  out.push(
    "",
    ...writeRows(r.orders, r.stock),
    `| POST /api/webhooks/payment (payments), unique signed notifications | ${r.settings.webhook_connections} | ${r.webhook.rps} | ${r.webhook.rps_each.join(", ")} | ${ms(r.webhook.p50_ms)} | ${ms(r.webhook.p99_ms)} | ${r.webhook.server_cpu_us} | ${r.webhook.postgres_cpu_us} | ${r.webhook.nats_cpu_us} | ${r.webhook.other_cpu_pct_max} | ${r.webhook.errors} / ${r.webhook.non2xx} |`,
    "",
    ...stockTables(r.stock),
    "",
    "| pipeline | notifications | p50 ms | p99 ms | max ms | lost |",
    "|---|---:|---:|---:|---:|---:|",
    `| accepted (200) → orders.paid on NATS | ${r.latency.notifications} | ${ms(r.latency.p50_ms)} | ${ms(r.latency.p99_ms)} | ${ms(r.latency.max_ms)} | ${r.latency.lost} |`,
    "",
    ...burstRows(r.bursts),
    "| binary | exec → /ready median ms (each) | RSS at /ready MiB | RSS right after its load MiB | 3 s later | 65 s later (anon + file) | peak RSS MiB |",
    "|---|---|---:|---:|---:|---:|---:|",
  );
  const rss = (name: "api" | "payments" | "payments_webhook") => {
    const [now, quiet, idle] = [
      r.memory_after[name],
      r.memory_settled.after_3s[name],
      r.memory_settled.after_65s[name],
    ];
    return `${now.rss_mib} | ${quiet.rss_mib} | ${idle.rss_mib} (${idle.anon_mib} + ${idle.file_mib}) | ${Math.max(now.peak_mib, idle.peak_mib)}`;
  };
  out.push(
    `| api | ${r.startup.api.ready_ms_median} (${r.startup.api.ready_ms_each.join(", ")}) | ${r.startup.api.rss_at_ready_mib} | ${rss("api")} |`,
    `| payments (after the webhook load) | ${r.startup.payments.ready_ms_median} (${r.startup.payments.ready_ms_each.join(", ")}) | ${r.startup.payments.rss_at_ready_mib} | ${rss("payments_webhook")} |`,
    `| payments (after the latency run) | | | ${rss("payments")} |`,
  );
  const readsFloor = Math.min(r.reads.product.api_over_floor, r.reads.list.api_over_floor);
  const readsExpress = Math.min(r.reads.product.api_over_express, r.reads.list.api_over_express);
  const readyMax = Math.max(r.startup.api.ready_ms_median, r.startup.payments.ready_ms_median);
  const settled = r.memory_settled.after_65s;
  const rssMax = Math.max(
    settled.api.rss_mib,
    settled.payments.rss_mib,
    settled.payments_webhook.rss_mib,
  );
  out.push(
    "",
    "| goal | target | measured | verdict |",
    "|---|---|---|---|",
    `| api reads vs floor | ≥ 0.80× | product ${x(r.reads.product.api_over_floor)}, list ${x(r.reads.list.api_over_floor)} | ${verdict(readsFloor >= 0.8)} |`,
    `| api reads vs Express | ≥ 3× | product ${x(r.reads.product.api_over_express)}, list ${x(r.reads.list.api_over_express)} | ${verdict(readsExpress >= 3)} |`,
    `| hot tracked product vs untracked, orders/s | ≥ 0.8× | ${x(r.stock.hot.tracked_over_untracked)} (${r.stock.hot.tracked_over_untracked_each.join(", ")}); stock consistent: ${r.stock.hot.stock_consistent} | ${verdict(r.stock.hot.tracked_over_untracked >= 0.8 && r.stock.hot.stock_consistent)} |`,
    `| flash sale: 1000 orders for 100 units | exactly 100, 900 × 409, stock 0 | ${r.stock.race.created} created, ${r.stock.race.refused_409} refused, stock left ${r.stock.race.stock_left} | ${verdict(r.stock.race.created === 100 && r.stock.race.refused_409 === 900 && r.stock.race.stock_left === 0)} |`,
    `| webhook accept p99, 32 in flight | ≤ 20 ms | ${ms(r.webhook.p99_ms)} ms | ${verdict(r.webhook.p99_ms <= 20)} |`,
    `| accepted → orders.paid p99 | ≤ 50 ms | ${ms(r.latency.p99_ms)} ms | ${verdict(r.latency.p99_ms <= 50 && r.latency.lost === 0)} |`,
    ...burstGoals(r.bursts),
    `| binaries: exec → /ready | ≤ 300 ms | api ${r.startup.api.ready_ms_median} ms, payments ${r.startup.payments.ready_ms_median} ms | ${verdict(readyMax <= 300)} |`,
    `| binaries: resident memory after the run, 65 s quiet (right after the load) | ≤ 80 MB | api ${settled.api.rss_mib} (${r.memory_after.api.rss_mib}) MiB, payments ${Math.max(settled.payments.rss_mib, settled.payments_webhook.rss_mib)} (${Math.max(r.memory_after.payments.rss_mib, r.memory_after.payments_webhook.rss_mib)}) MiB | ${verdict(rssMax * 1.048576 <= 80)} |`,
    "",
  );
  return out.join("\n");
}

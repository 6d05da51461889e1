/**
 * Draws docs/soak.svg from the soak row's output: throughput (top) and p99 latency (bottom) of
 * each scenario per window, against time, with the RSS of both services in the caption.
 *
 *   bun bench/scenarios/soak-chart.ts /tmp/commerce-bench-…/soak.json
 */
import { readFileSync, writeFileSync } from "node:fs";
import type { SoakResults } from "./soak";

const file = process.argv[2];
if (!file) throw new Error("usage: bun bench/scenarios/soak-chart.ts <soak.json>");
const r = JSON.parse(readFileSync(file, "utf8")) as SoakResults;
const shown = [
  ["product", "GET /api/products/{id}", "#1f77b4"],
  ["list", "GET /api/products (a page)", "#ff7f0e"],
  ["order", "POST /api/orders", "#2ca02c"],
  ["webhook", "POST /api/webhooks/payment", "#d62728"],
] as const;

const [width, height] = [980, 640];
const left = 80;
const right = 700;
const panels = [
  {
    top: 50,
    bottom: 300,
    label: "req/s",
    pick: (w: SoakResults["windows"][number], n: string) => w.runs[n as "product"].rps,
  },
  {
    top: 360,
    bottom: 580,
    label: "p99 ms",
    pick: (w: SoakResults["windows"][number], n: string) => w.runs[n as "product"].p99_ms,
  },
];
const end = r.windows.at(-1)?.end_s ?? 1;
const x = (s: number) => left + (s / end) * (right - left);

const out: string[] = [
  `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
  "<title>O9: throughput and p99 per window over a soak of steady mixed load</title>",
  `<rect width="${width}" height="${height}" fill="white"/>`,
  `<text x="${left}" y="24" font-size="15" font-weight="bold">Soak: ${r.minutes} minutes of steady mixed load, ${r.window_seconds} s windows</text>`,
];
for (const panel of panels) {
  const max = Math.max(...r.windows.flatMap((w) => shown.map(([n]) => panel.pick(w, n)))) * 1.1;
  const y = (v: number) => panel.bottom - (v / max) * (panel.bottom - panel.top);
  for (let i = 0; i <= 4; i++) {
    const v = (max / 4) * i;
    out.push(
      `<line x1="${left}" x2="${right}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/>`,
      `<text x="${left - 8}" y="${y(v) + 4}" text-anchor="end">${Math.round(v)}</text>`,
    );
  }
  out.push(
    `<text x="${left - 60}" y="${panel.top - 10}">${panel.label}</text>`,
    `<rect x="${left}" y="${panel.top}" width="${right - left}" height="${panel.bottom - panel.top}" fill="none" stroke="#333"/>`,
  );
  for (const [name, , colour] of shown) {
    const points = r.windows.map((w) => [x(w.end_s), y(panel.pick(w, name))]);
    out.push(
      `<path d="${points.map(([px, py], i) => `${i ? "L" : "M"}${px},${py}`).join(" ")}" fill="none" stroke="${colour}" stroke-width="2"/>`,
      ...points.map(([px, py]) => `<circle cx="${px}" cy="${py}" r="3" fill="${colour}"/>`),
    );
  }
}
for (const w of r.windows)
  out.push(
    `<text x="${x(w.end_s)}" y="${panels[1].bottom + 18}" text-anchor="middle">${w.end_s}s</text>`,
  );
shown.forEach(([, label, colour], i) => {
  const ly = 60 + i * 22;
  out.push(
    `<line x1="${right + 20}" x2="${right + 50}" y1="${ly}" y2="${ly}" stroke="${colour}" stroke-width="2"/>`,
    `<text x="${right + 58}" y="${ly + 4}">${label}</text>`,
  );
});
const { api, payments } = r.rss_mib;
out.push(
  `<text x="${right + 20}" y="180">RSS, end of minute 1 → end:</text>`,
  `<text x="${right + 20}" y="198">api ${api.minute_1} → ${api.end} MiB</text>`,
  `<text x="${right + 20}" y="216">payments ${payments.minute_1} → ${payments.end} MiB</text>`,
  `<text x="${right + 20}" y="240">last minute / first: api ${r.goals.api_last_over_first.toFixed(2)}×,</text>`,
  `<text x="${right + 20}" y="258">payments ${r.goals.payments_last_over_first.toFixed(2)}×</text>`,
  `<text x="${left}" y="${height - 16}" fill="#555">Closed loop, each scenario its own wrk; floor (postgres.js) product reads before / after: ${r.floor_product_rps.before} / ${r.floor_product_rps.after} req/s.</text>`,
  "</svg>",
);
writeFileSync(new URL("../../docs/soak.svg", import.meta.url), `${out.join("\n")}\n`);
console.log("docs/soak.svg written");

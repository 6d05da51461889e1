/**
 * Draws docs/scale.svg from the scale bench's output: p50 latency against row count, both axes
 * logarithmic, one line per list query. Given several runs, each point is their median.
 *
 *   bun bench/scenarios/scale-chart.ts /tmp/commerce-bench-…/scale.json [another scale.json …]
 */
import { readFileSync, writeFileSync } from "node:fs";
import type { ScaleResults } from "./scale";

const files = process.argv.slice(2);
if (files.length === 0) throw new Error("usage: bun bench/scenarios/scale-chart.ts <scale.json> …");
const runs = files.map((file) => JSON.parse(readFileSync(file, "utf8")) as ScaleResults);
const sizes = runs[0].sizes;

const shown: [name: string, colour: string, dashed?: boolean][] = [
  ["products, page 1", "#1f77b4"],
  ["products, last page", "#1f77b4", true],
  ["products big (½), page 1", "#ff7f0e"],
  ["products big (½), last page", "#ff7f0e", true],
  ["products big (½), middle page", "#d62728"],
  ["products c7 (1/200), page 1", "#8c564b"],
  ["products big (½), after walk from the middle", "#bcbd22"],
  ["orders, admin, page 1", "#2ca02c"],
  ["orders, admin, last page", "#2ca02c", true],
  ["orders, admin, middle page", "#9467bd"],
  ["orders, admin, status=paid (⅓), page 1", "#17becf"],
  ["orders, customer (½), page 1", "#e377c2"],
  ["orders, customer (½), last page", "#e377c2", true],
  ["orders, admin, after walk from the middle", "#7f7f7f"],
];

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const series = shown.map(([name, colour, dashed]) => ({
  name,
  colour,
  dashed,
  points: sizes.map((_, i) =>
    median(
      runs.map((run) => run.queries.find((q) => q.name === name)?.by_size[i].p50_ms ?? Number.NaN),
    ),
  ),
}));

const all = series.flatMap((s) => s.points).filter((v) => v > 0);
const yMin = 10 ** Math.floor(Math.log10(Math.min(...all)));
const yMax = 10 ** Math.ceil(Math.log10(Math.max(...all)));
const [width, height] = [980, 560];
const plot = { left: 70, top: 50, right: 620, bottom: 500 };
const x = (rows: number) =>
  plot.left +
  ((Math.log10(rows) - Math.log10(sizes[0])) /
    (Math.log10(sizes.at(-1) as number) - Math.log10(sizes[0]))) *
    (plot.right - plot.left);
const y = (ms: number) =>
  plot.bottom -
  ((Math.log10(ms) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin))) *
    (plot.bottom - plot.top);
const rowsLabel = (rows: number) => (rows >= 1e6 ? `${rows / 1e6}M` : `${rows / 1e3}k`);
const xmlText = (text: string) =>
  text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

const out: string[] = [
  `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
  "<title>P4: list latency against rows in the table, log scales</title>",
  `<rect width="${width}" height="${height}" fill="white"/>`,
  `<text x="${plot.left}" y="24" font-size="15" font-weight="bold">List latency (p50 ms, through HTTP) against rows in the table — log scales</text>`,
];
for (let decade = yMin; decade <= yMax; decade *= 10) {
  for (const step of [1, 2, 5]) {
    const ms = decade * step;
    if (ms > yMax) break;
    out.push(
      `<line x1="${plot.left}" x2="${plot.right}" y1="${y(ms)}" y2="${y(ms)}" stroke="${step === 1 ? "#bbb" : "#eee"}"/>`,
    );
    if (step === 1 || ms === yMax)
      out.push(
        `<text x="${plot.left - 8}" y="${y(ms) + 4}" text-anchor="end">${ms >= 1 ? ms : ms.toFixed(1)} ms</text>`,
      );
  }
}
for (const rows of sizes)
  out.push(
    `<line x1="${x(rows)}" x2="${x(rows)}" y1="${plot.top}" y2="${plot.bottom}" stroke="#bbb"/>`,
    `<text x="${x(rows)}" y="${plot.bottom + 18}" text-anchor="middle">${rowsLabel(rows)} rows</text>`,
  );
out.push(
  `<rect x="${plot.left}" y="${plot.top}" width="${plot.right - plot.left}" height="${plot.bottom - plot.top}" fill="none" stroke="#333"/>`,
);
series.forEach((s, i) => {
  const path = s.points.map((ms, j) => `${j ? "L" : "M"}${x(sizes[j])},${y(ms)}`).join(" ");
  const dash = s.dashed ? ' stroke-dasharray="6 4"' : "";
  out.push(`<path d="${path}" fill="none" stroke="${s.colour}" stroke-width="2"${dash}/>`);
  for (const [j, ms] of s.points.entries())
    out.push(`<circle cx="${x(sizes[j])}" cy="${y(ms)}" r="3" fill="${s.colour}"/>`);
  const ly = plot.top + 8 + i * 22;
  out.push(
    `<line x1="${plot.right + 20}" x2="${plot.right + 50}" y1="${ly}" y2="${ly}" stroke="${s.colour}" stroke-width="2"${dash}/>`,
    `<text x="${plot.right + 58}" y="${ly + 4}">${xmlText(s.name)}</text>`,
  );
});
out.push(
  `<text x="${plot.left}" y="${height - 20}" fill="#555">Dashed: last page. Middle pages still walk the index to their offset; page 1, the last page and after= stay flat. Median of ${runs.length} run(s).</text>`,
  "</svg>",
);
writeFileSync(new URL("../../docs/scale.svg", import.meta.url), `${out.join("\n")}\n`);
console.log("docs/scale.svg written");

/**
 * N4's row: what one `/metrics` scrape costs (its size, its time), and what 300 scrapes, 20 at a
 * time, do to product reads beside them: wrk's p99 of `GET /api/products/{id}` alone, then with the
 * scrapers, in one run against the same api.
 *
 *   BENCH_ONLY=scrapes npm run bench
 */
import { readFileSync } from "node:fs";
import { type Outcome, runDir, startApi, wrk } from "../context";
import { pagesPerCategory, writeDataFiles } from "../data";
import { ms, verdict } from "../format";
import { type Service, say, stop } from "../harness";
import { percentile } from "../order-paid-latency";

export type ScrapeResult = {
  bytes: number;
  /** The api's own duration of a scrape made alone (its request log line): median, p99. */
  server_p50_ms: number;
  server_p99_ms: number;
  /** One scrape at a time, 50 of them: its time from the request to the last byte. */
  scrape_p50_ms: number;
  scrape_p99_ms: number;
  scrapers: number;
  scrapes_done: number;
  read_rps_alone: number;
  read_p99_ms_alone: number;
  read_rps_with: number;
  read_p99_ms_with: number;
};

/** The first 51 `/metrics` requests' `duration_ms` (the ones made one at a time), sorted. */
function serverDurations(logFile: string): number[] {
  return readFileSync(logFile, "utf8")
    .split("\n")
    .filter((line) => line.includes('"route":"/metrics"'))
    .map((line) => JSON.parse(line).duration_ms as number)
    .slice(0, 51)
    .sort((a, b) => a - b);
}

const scrape = async (api: Service) => (await fetch(`${api.url}/metrics`)).text();

export async function measureScrapes(
  api: Service,
  scrapers = 20,
  total = 300,
): Promise<ScrapeResult> {
  const text = await scrape(api);
  const times: number[] = [];
  for (let i = 0; i < 50; i++) {
    const started = performance.now();
    await scrape(api);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const alone = await wrk(api, "product.lua", [runDir]);
  say(`scrapes: reads alone ${alone.rps} req/s, p99 ${alone.p99_ms} ms`);
  // As a scraper fleet would: `total` scrapes, `scrapers` at a time, from a second into the reads.
  let running = true;
  let done = 0;
  let started = 0;
  const loops = (async () => {
    await Bun.sleep(1000);
    await Promise.all(
      Array.from({ length: scrapers }, async () => {
        while (running && started < total) {
          started++;
          await scrape(api);
          done++;
        }
      }),
    );
  })();
  const beside = await wrk(api, "product.lua", [runDir]);
  running = false;
  await loops;
  say(`scrapes: reads beside ${scrapers} scrapers ${beside.rps} req/s, p99 ${beside.p99_ms} ms`);
  const round = (v: number) => Math.round(v * 100) / 100;
  const server = serverDurations(`${runDir}/${api.name}.log`);
  return {
    server_p50_ms: round(percentile(server, 0.5)),
    server_p99_ms: round(percentile(server, 0.99)),
    bytes: Buffer.byteLength(text),
    scrape_p50_ms: round(percentile(times, 0.5)),
    scrape_p99_ms: round(percentile(times, 0.99)),
    scrapers,
    scrapes_done: done,
    read_rps_alone: alone.rps,
    read_p99_ms_alone: alone.p99_ms,
    read_rps_with: beside.rps,
    read_p99_ms_with: beside.p99_ms,
  };
}

export const scrapeRows = (r: ScrapeResult) => [
  `| /metrics | one scrape KiB | api's own time p50 ms | p99 ms | client p50 ms | p99 ms | reads alone req/s, p99 ms | beside 300 scrapes, ${r.scrapers} at a time: req/s, p99 ms | scrapes done |`,
  "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  `| | ${(r.bytes / 1024).toFixed(1)} | ${ms(r.server_p50_ms)} | ${ms(r.server_p99_ms)} | ${ms(r.scrape_p50_ms)} | ${ms(r.scrape_p99_ms)} | ${r.read_rps_alone}, ${ms(r.read_p99_ms_alone)} | ${r.read_rps_with}, ${ms(r.read_p99_ms_with)} | ${r.scrapes_done} |`,
  "",
  "| goal | target | measured | verdict |",
  "|---|---|---|---|",
  `| N4: one scrape | ≤ 40 KiB, ≤ 3 ms | ${(r.bytes / 1024).toFixed(1)} KiB, the api's p50 ${ms(r.server_p50_ms)} ms | ${verdict(r.bytes <= 40 * 1024 && r.server_p50_ms <= 3)} |`,
  `| N4: a read's p99 beside ${r.scrapers} scrapers | ≤ 2× alone | ${(r.read_p99_ms_with / r.read_p99_ms_alone).toFixed(2)}× | ${verdict(r.read_p99_ms_with <= 2 * r.read_p99_ms_alone)} |`,
];

/** BENCH_ONLY=scrapes: the api after a round of reads (its series in place), then the row. */
export async function scrapesRow(): Promise<Outcome> {
  const { api, productIds } = await startApi();
  await writeDataFiles(runDir, productIds);
  await wrk(api, "product.lua", [runDir], { duration: 3 });
  await wrk(api, "list.lua", [runDir, String(pagesPerCategory)], { duration: 3 });
  const result = await measureScrapes(api);
  await stop(api);
  const report = scrapeRows(result).join("\n");
  return { files: { "results.md": `${report}\n`, "results.json": result }, print: report };
}

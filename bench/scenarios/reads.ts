/**
 * The read rows: GET /api/products/{id} and a list page, the api against the postgres.js floor,
 * the Bun-SQL floor (and Express in the full run), in alternating rounds within this one process,
 * with the same wrk threads and connections; ratios are taken round by round, then the median.
 *
 *   BENCH_ONLY=reads npm run bench     # the two read rows against both floors (~3 min)
 */
import { launch, type Outcome, runDir, settings, startApi, wrk } from "../context";
import { pagesPerCategory, writeDataFiles } from "../data";
import { ratio } from "../format";
import { databaseUrl, type Service, say, stop } from "../harness";
import { checkClean, median, summarise, type WrkRun } from "../load";

export type ReadComparison = Awaited<ReturnType<typeof readComparison>>;

/** The two floors: the api's SQL on postgres.js and on Bun's built-in SQL, nothing else. */
export async function launchFloors(): Promise<Service[]> {
  const floor = await launch("floor", [process.execPath, "bench/floor.ts"], {
    DATABASE_URL: databaseUrl,
  });
  const floorBun = await launch("floor-bun", [process.execPath, "bench/floor.ts"], {
    DATABASE_URL: databaseUrl,
    FLOOR_DRIVER: "bun",
  });
  return [floor, floorBun];
}

export async function readComparison(
  targets: Service[],
  script: "product.lua" | "list.lua",
  args: string[],
) {
  say(`${script}: warm-up`);
  for (const target of targets) await wrk(target, script, args, { duration: 3 });
  const runs = new Map<string, WrkRun[]>(targets.map((t) => [t.name, []]));
  const ratios = { floor: [] as number[], express: [] as number[], floor_bun: [] as number[] };
  for (let round = 0; round < settings.rounds; round++) {
    // The order rotates each round, so no target always runs right after another.
    const order = targets.map((_, i) => targets[(i + round) % targets.length]);
    const byName = new Map<string, WrkRun>();
    for (const target of order) {
      const run = await wrk(target, script, args);
      byName.set(target.name, run);
      runs.get(target.name)?.push(run);
      say(`${script} round ${round + 1} ${target.name}: ${run.rps} req/s, p99 ${run.p99_ms} ms`);
    }
    const api = byName.get("api")?.rps ?? Number.NaN;
    ratios.floor.push(api / (byName.get("floor")?.rps ?? Number.NaN));
    ratios.express.push(api / (byName.get("express")?.rps ?? Number.NaN));
    ratios.floor_bun.push(api / (byName.get("floor-bun")?.rps ?? Number.NaN));
  }
  for (const list of runs.values()) checkClean(list, script);
  return {
    targets: [...runs.values()].map(summarise),
    api_over_floor: median(ratios.floor),
    api_over_express: median(ratios.express),
    api_over_floor_each: ratios.floor,
    api_over_express_each: ratios.express,
    api_over_floor_bun: median(ratios.floor_bun),
    api_over_floor_bun_each: ratios.floor_bun,
  };
}

/** Both read comparisons against `targets` (the data files are written already). */
export async function measureReads(targets: Service[]) {
  const product = await readComparison(targets, "product.lua", [runDir]);
  const list = await readComparison(targets, "list.lua", [runDir, String(pagesPerCategory)]);
  return { product, list };
}

/** BENCH_ONLY=reads: the two read rows against both floors (postgres.js, Bun's SQL) alone. */
export async function readsRow(): Promise<Outcome> {
  const { api, productIds } = await startApi();
  await writeDataFiles(runDir, productIds);
  const targets = [api, ...(await launchFloors())];
  const reads = await measureReads(targets);
  await Promise.all(targets.map(stop));
  const rows = Object.entries(reads).map(
    ([kind, c]) =>
      `| ${kind} | ${c.targets.map((t) => `${t.target} ${t.rps} (${t.rps_each.join(", ")}; ${t.server_cpu_us} µs CPU/req)`).join("; ")} | ${ratio(c.api_over_floor, c.api_over_floor_each)} | ${ratio(c.api_over_floor_bun, c.api_over_floor_bun_each)} |`,
  );
  const report = [
    "| read | req/s median (each round) | api / floor, postgres.js | api / floor, Bun SQL |",
    "|---|---|---:|---:|",
    ...rows,
  ].join("\n");
  return { files: { "results.md": `${report}\n` }, print: report };
}

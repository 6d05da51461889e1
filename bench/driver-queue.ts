/**
 * O9's cause, alone: a plain loop of `select ... where id = $1` at 32 in flight on one postgres.js
 * pool (10 connections), in rounds of 4 s, on the installed (patched) driver and on a copy of it
 * with the queue as 3.4.9 ships it: queries a second and this process's CPU per query, each
 * round. The unpatched pool slows round after round; the patched one stays flat.
 *
 *   DATABASE_URL=postgres://... npx bun bench/driver-queue.ts [rounds]
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parsePatch } from "../scripts/dependency-patches";

const url = process.env.DATABASE_URL ?? "postgres://root@127.0.0.1:5432/bench";
const rounds = Number(process.argv[2] ?? 6);
const root = new URL("..", import.meta.url).pathname;

/** A copy of the installed postgres.js with the queue hunks of patches/ undone. */
function unpatchedCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), "postgres-unpatched-"));
  cpSync(join(root, "node_modules/postgres"), join(dir, "postgres"), { recursive: true });
  const hunks = parsePatch(readFileSync(join(root, "patches/postgres+3.4.9.patch"), "utf8"));
  for (const hunk of hunks.filter((h) => h.file === "node_modules/postgres/src/queue.js")) {
    const file = join(dir, "postgres/src/queue.js");
    writeFileSync(file, readFileSync(file, "utf8").replace(hunk.after, hunk.before));
  }
  return dir;
}

async function loop(label: string, entry: string) {
  const postgres = (await import(entry)).default;
  const sql = postgres(url, { max: 10, onnotice: () => {} });
  const [{ id }] = await sql`select id from api.products order by id limit 1`;
  const rates: number[] = [];
  const cpuPerQuery: number[] = [];
  for (let round = 0; round < rounds; round++) {
    let done = 0;
    const cpu = process.cpuUsage();
    const until = performance.now() + 4000;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (performance.now() < until) {
          await sql`select id, name, price from api.products where id = ${id}`;
          done++;
        }
      }),
    );
    rates.push(Math.round(done / 4));
    const { user, system } = process.cpuUsage(cpu);
    cpuPerQuery.push(Math.round(((user + system) / done) * 10) / 10);
  }
  await sql.end();
  // CPU per query says the same as the rate where other load on the machine blurs the rate.
  console.log(`${label}: ${rates.join(" → ")} queries/s; ${cpuPerQuery.join(" → ")} µs CPU/query`);
  return rates;
}

const copy = unpatchedCopy();
try {
  await loop("unpatched queue (3.4.9)", join(copy, "postgres/src/index.js"));
  await loop("patched queue", join(root, "node_modules/postgres/src/index.js"));
} finally {
  rmSync(copy, { recursive: true, force: true });
}

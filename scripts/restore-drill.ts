/**
 * X6: `npm run restore-drill [-- --orders 120 --after 30 --base 27400 --report docs/restore-drill-report.md]`:
 * backs up, damages and restores a PostgreSQL cluster to a moment on loopback (Patroni with
 * pgBackRest, both services as processes), checks the invariants on the restored data and prints
 * its report (written to --report as well). Exits 1 when an invariant does not hold.
 */
import { writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { parseArgs } from "node:util";
import { runRestoreDrill } from "./restore-drill/drill";
import { markdownReport } from "./restore-drill/report";

const { values } = parseArgs({
  options: {
    orders: { type: "string", default: "120" },
    after: { type: "string", default: "30" },
    base: { type: "string", default: "27400" },
    report: { type: "string" },
  },
});
const log = (line: string) => console.log(`[restore-drill] ${line}`);

const result = await runRestoreDrill({
  ordersBeforeT: Number(values.orders),
  ordersAfterT: Number(values.after),
  base: Number(values.base),
  log,
});
const machine = `${cpus().length} cores, load ${loadavg()[0].toFixed(1)} at the end, pgBackRest ${Bun.spawnSync(
  ["pgbackrest", "version"],
)
  .stdout.toString()
  .trim()
  .replace(/^pgBackRest /, "")}`;
const report = markdownReport(result, machine);
console.log(report);
if (values.report) {
  writeFileSync(values.report, report);
  log(`report written to ${values.report}`);
}
process.exit(result.invariants.every((invariant) => invariant.held) ? 0 : 1);

import type { DrillResult } from "./drill";

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** X6: the drill's report as Markdown, written by the program (never edited by hand). */
export function markdownReport(result: DrillResult, machine: string): string {
  const held = result.invariants.every((invariant) => invariant.held);
  const restoreMs = result.timings["restore to T (files + WAL replay + promotion)"] ?? 0;
  return `# Restore drill report

Written by \`npm run restore-drill\` (scripts/restore-drill.ts) on ${result.startedAt}; do not edit
by hand, run it again. What it does and what an operator does after a restore:
[backups.md](backups.md).

**${held ? "PASS" : "FAIL"}**: ${result.invariants.filter((i) => i.held).length} of ${result.invariants.length} invariants held. The point-in-time restore took **${seconds(restoreMs)}** (pgBackRest
restoring the base backup into a new data directory, PostgreSQL replaying the archived WAL to T
and promoting itself).

- Machine: ${machine}
- Cluster: Patroni, three PostgreSQL 15 nodes (synchronous_mode_strict), every node archiving
  with pgBackRest (\`archive_command\` through Patroni's \`postgresql.parameters\`) to one posix
  repository
- Base backup: \`${result.backupLabel}\` (full)
- T: \`${result.target}\` (recorded once every notification before it was applied and both
  outboxes were empty)
- The mistake after T: \`${result.mistake}\`
- Restored into: a new data directory (\`pgbackrest restore --type=time --target=T
  --target-action=promote --archive-mode=off\`), started alone and checked, then taken over by a
  new three-node Patroni cluster (a scope of its own) on which the services ran

## Invariants

| invariant | held | what was found |
| --- | --- | --- |
${result.invariants.map((i) => `| ${i.name} | ${i.held ? "yes" : "**no**"} | ${i.detail} |`).join("\n")}

What brings the restored shop forward here is the provider sending its notifications again. A
notification payments had stored and published before T but the api applied only after T comes
back stored and unapplied, and a re-send is answered as a duplicate: B2's anti-entropy check
(whose checkpoint is restored to T too) publishes it again within a minute. The drill records T
when none is in flight, so it does not exercise that; \`test/e2e/anti-entropy.test.ts\` does.

## Figures

| figure | value |
| --- | --- |
${Object.entries(result.figures)
  .map(([name, value]) => `| ${name} | ${value} |`)
  .join("\n")}

## Timings

| step | time |
| --- | --- |
${Object.entries(result.timings)
  .map(([step, ms]) => `| ${step} | ${seconds(ms)} |`)
  .join("\n")}

## The restored cluster's log, where recovery stopped

\`\`\`
${result.restoredLog.trim()}
\`\`\`
`;
}

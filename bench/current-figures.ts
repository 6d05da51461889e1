/**
 * docs/benchmarks.md's "Current figures" are the bench's own tables, not pasted ones: a full
 * `npm run bench` rewrites the section between the markers from its results.json, and
 * `npm run bench -- report [run directory]` does the same from a run already saved (by default
 * the newest one with a results.json). Rendered by the same functions that print the run's report.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Results, render } from "./scenarios/report";
import { renderScale, type ScaleResults } from "./scenarios/scale";
import { renderSoak, type SoakResults } from "./scenarios/soak";

export const start = "<!-- bench:current:start (written by npm run bench; do not edit) -->";
export const end = "<!-- bench:current:end -->";

/** A full run's results.json, as scenarios/full.ts writes it. */
export type FullResults = Results & {
  run: string;
  at: string;
  commit?: string;
  scale: ScaleResults;
  soak: SoakResults;
};

/** The commit the services were measured at, with "+changes" when the tree was not clean. */
export function commitOf(root: string): string {
  const head = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd: root });
  if (head.exitCode !== 0) return "unknown";
  const dirty = Bun.spawnSync(["git", "status", "--porcelain", "--untracked-files=no"], {
    cwd: root,
  });
  return `${head.stdout.toString().trim()}${dirty.stdout.toString().trim() ? "+changes" : ""}`;
}

/** The section's body: where the figures come from, then the run's own tables. */
export function renderCurrent(r: FullResults): string {
  return [
    `Run \`${r.run}\` of \`npm run bench\`, finished ${r.at}, at commit \`${r.commit ?? "unknown"}\`.`,
    "",
    render(r),
    renderScale(r.scale),
    "",
    renderSoak(r.soak),
  ].join("\n");
}

/** `doc` with the text between the markers replaced by `body`. */
export function replaceCurrent(doc: string, body: string): string {
  const from = doc.indexOf(start);
  const to = doc.indexOf(end);
  if (from < 0 || to < from) throw new Error(`the document has no ${start} … ${end} section`);
  return `${doc.slice(0, from + start.length)}\n\n${body.trim()}\n\n${doc.slice(to)}`;
}

/** The newest run directory (bench/harness.ts makeRunDir) that holds a full run's results. */
export function lastRunDir(): string | undefined {
  return readdirSync(tmpdir())
    .filter((name) => name.startsWith("commerce-bench-"))
    .map((name) => join(tmpdir(), name))
    .filter((dir) => existsSync(join(dir, "results.json")))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
}

/** Rewrites the current figures of `docPath` from `runDir`'s results.json. */
export function refreshCurrentFigures(runDir: string, docPath: string): void {
  const results: FullResults = JSON.parse(readFileSync(join(runDir, "results.json"), "utf8"));
  writeFileSync(docPath, replaceCurrent(readFileSync(docPath, "utf8"), renderCurrent(results)));
}

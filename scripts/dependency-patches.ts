/**
 * The fixes in patches/*.patch, which patch-package applies to node_modules on every
 * `npm install` and `npm ci` (the root `postinstall`). `missingHunks` names those an install does
 * not carry (patches/ left out, patch-package skipped, a dependency upgraded past its patch), so
 * `npm run build` and the tests fail instead of shipping the unpatched dependency.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export type Hunk = { file: string; header: string; before: string; after: string };

/** The hunks of a unified diff as written by patch-package; file paths relative to the root. */
export function parsePatch(patch: string): Hunk[] {
  const hunks: Hunk[] = [];
  const lines = patch.split("\n");
  let file = "";
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].startsWith("+++ ")) file = lines[i].replace(/^\+\+\+ (b\/)?/, "");
    const header = lines[i];
    const counts = header.match(/^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/);
    if (!counts) continue;
    let [oldLeft, newLeft] = [Number(counts[1] ?? 1), Number(counts[2] ?? 1)];
    const before: string[] = [];
    const after: string[] = [];
    while (oldLeft > 0 || newLeft > 0) {
      const line = lines[++i];
      if (line === undefined) throw new Error(`${file}: hunk ${header} is cut short`);
      if (line.startsWith("\\")) continue; // "\ No newline at end of file"
      const text = line.slice(1);
      if (!line.startsWith("+")) {
        before.push(text);
        oldLeft--;
      }
      if (!line.startsWith("-")) {
        after.push(text);
        newLeft--;
      }
    }
    hunks.push({ file, header: counts[0], before: before.join("\n"), after: after.join("\n") });
  }
  return hunks;
}

/** Every hunk of `root`/patches/*.patch, and those whose patched text `root`'s files lack. */
export function missingHunks(root = process.cwd()): { checked: number; missing: string[] } {
  const directory = join(root, "patches");
  const patches = existsSync(directory)
    ? readdirSync(directory).filter((name) => name.endsWith(".patch"))
    : [];
  let checked = 0;
  const missing: string[] = [];
  for (const name of patches.sort()) {
    for (const hunk of parsePatch(readFileSync(join(directory, name), "utf8"))) {
      checked++;
      const path = join(root, hunk.file);
      if (!existsSync(path) || !readFileSync(path, "utf8").includes(hunk.after))
        missing.push(`patches/${name}: ${hunk.file} ${hunk.header}`);
    }
  }
  return { checked, missing };
}

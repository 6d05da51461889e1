import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

/**
 * The test tiers of docs/development.md: `npm test` runs every file; `npm run test:fast` the
 * module and in-process ones; CI runs the smoke set of `test/binaries-smoke.txt` again against
 * the compiled binaries. A renamed file must not fall out of a tier unnoticed.
 */
const root = resolve(import.meta.dir, "../..");
const scripts = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts;

describe("test tiers", () => {
  test("test:fast names paths that exist, and no process-level folder", () => {
    const fast: string = scripts["test:fast"];
    const [, paths] = fast.split(" --timeout 30000 ");
    const named = paths.split(" ");
    expect(named.filter((path) => !existsSync(join(root, path)))).toEqual([]);
    expect(named.filter((path) => /^test\/(e2e|faults|console|deploy)\b/.test(path))).toEqual([]);
  });

  test("the binaries' smoke set names process-level test files that exist", () => {
    const smoke = readFileSync(join(root, "test/binaries-smoke.txt"), "utf8")
      .split("\n")
      .filter((line) => line && !line.startsWith("#"));
    expect(smoke.length).toBeGreaterThan(0);
    for (const path of smoke)
      expect({ path, exists: existsSync(join(root, path)) }).toEqual({ path, exists: true });
    expect(
      smoke.filter((path) => !/^test\/(e2e|faults|console)\/.+\.test\.ts$/.test(path)),
    ).toEqual([]);
    expect(readFileSync(join(root, ".ci/run"), "utf8")).toContain("test/binaries-smoke.txt");
  });
});

/**
 * Rule ids tie docs/behaviour.md to the tests (issue 27): every rule the project states is named
 * by the title of a test that proves it, and no test title names a rule that is not stated. The
 * gaps allowed for now are listed, each with its reason, in rule-ids-untested.txt.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";

const root = join(import.meta.dir, "..");
const testRoots = ["services", "shared", "packages", "scripts", "test", "bench"];

/** The ids docs/behaviour.md states: each rule is a list item that starts with its id in bold. */
export function statedIds(behaviour: string): Set<string> {
  return new Set([...behaviour.matchAll(/^- \*\*([A-Z]{1,2}\d{1,2})\*\*/gm)].map((m) => m[1]));
}

/** The titles of `test(...)`, `it(...)` and `describe(...)` (and `.each`, `.skipIf`, ...) calls. */
export function titlesOf(source: string): string[] {
  const call =
    /\b(?:test|it|describe)(?:\.(?:each|skipIf|if|todoIf)\([^)]*\)|\.(?:only|skip|todo|serial|concurrent))*\(\s*(["'`])((?:\\.|(?!\1)[\s\S])*?)\1/g;
  return [...source.matchAll(call)].map((m) => m[2]);
}

/** The rule ids a title names: an upper-case letter or two and one or two digits, alone. */
export const idsIn = (title: string): string[] =>
  [...title.matchAll(/\b[A-Z]{1,2}\d{1,2}\b/g)].map((m) => m[0]);

/** Each id some test title names, with the first file that names it. */
function namedIds(): Map<string, string> {
  const named = new Map<string, string>();
  for (const dir of testRoots) {
    for (const file of new Bun.Glob("**/*.test.ts").scanSync({ cwd: join(root, dir) })) {
      if (file.includes("node_modules/")) continue;
      const path = join(root, dir, file);
      // This file's own example titles are not tests of those rules.
      if (path === import.meta.path) continue;
      for (const title of titlesOf(readFileSync(path, "utf8")))
        for (const id of idsIn(title)) if (!named.has(id)) named.set(id, relative(root, path));
    }
  }
  return named;
}

/** rule-ids-untested.txt: "ID: reason" a line; `#` lines are comments. */
function allowed(): Map<string, string> {
  const text = readFileSync(join(import.meta.dir, "rule-ids-untested.txt"), "utf8");
  const entries = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line.trim() === "" || line.startsWith("#")) continue;
    const match = line.match(/^([A-Z]{1,2}\d{1,2}): (\S.*)$/);
    if (!match) throw new Error(`rule-ids-untested.txt: "${line}" is not "ID: reason"`);
    entries.set(match[1], match[2]);
  }
  return entries;
}

test("rule ids: the title finder sees ids in test, it and describe titles, and only ids", () => {
  const source = `describe("N8: a", () => { test.skipIf(x)('W1, W2 b', f); it(\`IPv6 /64 R1 → R3\`, f); });`;
  expect(titlesOf(source)).toEqual(["N8: a", "W1, W2 b", "IPv6 /64 R1 → R3"]);
  expect(titlesOf(source).flatMap(idsIn)).toEqual(["N8", "W1", "W2", "R1", "R3"]);
  expect(idsIn("ES256 and SHA256, E2E, U+0000")).toEqual([]);
});

test("rule ids: every id of docs/behaviour.md is named by a test title, and every id a title names is stated", () => {
  const stated = statedIds(readFileSync(join(root, "docs/behaviour.md"), "utf8"));
  const named = namedIds();
  const gaps = allowed();
  expect(stated.size).toBeGreaterThan(50);

  const untested = [...stated].filter((id) => !named.has(id) && !gaps.has(id));
  // A rule stated but proved by no test: name the rule in the title of the test that proves it.
  expect(untested).toEqual([]);

  const unstated = [...named]
    .filter(([id]) => !stated.has(id) && !gaps.has(id))
    .map(([id, file]) => `${id} (${file})`);
  // A title names a rule docs/behaviour.md does not state: state it there, or fix the title.
  expect(unstated).toEqual([]);

  const closed = [...gaps.keys()].filter((id) => stated.has(id) && named.has(id));
  const unknown = [...gaps.keys()].filter((id) => !stated.has(id) && !named.has(id));
  // rule-ids-untested.txt lists only open gaps: remove an entry once the gap is closed.
  expect({ closed, unknown }).toEqual({ closed: [], unknown: [] });
});

import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { end, replaceCurrent, start } from "./current-figures";

test("bench report: docs/benchmarks.md has one current-figures section the bench can rewrite", () => {
  const doc = readFileSync(join(import.meta.dir, "../docs/benchmarks.md"), "utf8");
  expect(doc.split(start).length).toBe(2);
  expect(doc.split(end).length).toBe(2);
  const rewritten = replaceCurrent(doc, "| row | figure |\n|---|---|\n| new | 1 |");
  const [before, rest] = rewritten.split(start);
  const [inside, after] = rest.split(end);
  expect(before).toBe(doc.split(start)[0]);
  expect(after).toBe(doc.split(end)[1]);
  expect(inside.trim()).toBe("| row | figure |\n|---|---|\n| new | 1 |");
  // Rewriting twice gives the same document: nothing accumulates between the markers.
  expect(replaceCurrent(rewritten, "| row | figure |\n|---|---|\n| new | 1 |")).toBe(rewritten);
});

import { describe, expect, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { missingHunks, parsePatch } from "./dependency-patches";

describe("patches/, as applied to node_modules by npm ci (postinstall: patch-package)", () => {
  test("every hunk is in the installed dependencies, every copy of postgres.js included", () => {
    const { checked, missing } = missingHunks();
    expect(missing).toEqual([]);
    const patched = parsePatch(readFileSync("patches/postgres+3.4.9.patch", "utf8"));
    expect(new Set(patched.map((hunk) => hunk.file))).toEqual(
      new Set([
        "node_modules/postgres/src/connection.js",
        "node_modules/postgres/cjs/src/connection.js",
        "node_modules/postgres/cf/src/connection.js",
        "node_modules/postgres/src/index.js",
        "node_modules/postgres/cjs/src/index.js",
        "node_modules/postgres/cf/src/index.js",
        "node_modules/postgres/src/queue.js",
        "node_modules/postgres/cjs/src/queue.js",
        "node_modules/postgres/cf/src/queue.js",
      ]),
    );
    expect(checked).toBeGreaterThanOrEqual(patched.length);
  });

  test("an install without the patches is reported hunk by hunk", () => {
    const root = mkdtempSync(join(tmpdir(), "dependency-patches-"));
    try {
      cpSync("patches", join(root, "patches"), { recursive: true });
      const hunks = parsePatch(readFileSync("patches/postgres+3.4.9.patch", "utf8"));
      for (const file of new Set(hunks.map((hunk) => hunk.file))) {
        const unpatched = hunks
          .filter((hunk) => hunk.file === file)
          .reduce(
            (text, hunk) => text.replace(hunk.after, hunk.before),
            readFileSync(file, "utf8"),
          );
        mkdirSync(dirname(join(root, file)), { recursive: true });
        writeFileSync(join(root, file), unpatched);
      }
      expect(missingHunks(root).missing).toHaveLength(hunks.length);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

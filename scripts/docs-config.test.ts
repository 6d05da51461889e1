import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const generated = ["docs/configuration.md", ".env.example"];

test("docs:config: docs/configuration.md and .env.example are what the services' schemas generate", () => {
  const out = mkdtempSync(join(tmpdir(), "docs-config-"));
  try {
    const run = Bun.spawnSync(
      [process.execPath, join(root, "scripts/docs-config.ts"), "--out", out],
      {
        cwd: root,
        stderr: "pipe",
      },
    );
    expect(run.stderr.toString()).toBe("");
    expect(run.exitCode).toBe(0);
    for (const file of generated) {
      const committed = readFileSync(join(root, file), "utf8");
      // A failure here means a schema changed without `npm run docs:config`: run it and commit.
      expect(readFileSync(join(out, file), "utf8"), file).toBe(committed);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

import { describe, expect, test } from "bun:test";
import { join } from "node:path";

describe("the process guard", () => {
  test("X2 (v5): an unhandled rejection (a pooled connection closed under a query) and an exception thrown from a timer are logged without a stack and counted, and the process goes on", async () => {
    const child = Bun.spawn([process.execPath, join(import.meta.dir, "fixtures/unhandled.ts")], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
    const lines = out.split("\n");
    const logged = lines.filter((line) => line.startsWith("{")).map((line) => JSON.parse(line));
    expect(code).toBe(0);
    expect(lines).toContain("still running");
    expect(
      logged.map((line) => [line.level, line.msg, line.error_code ?? line.error_name]),
    ).toEqual([
      ["error", "unhandled rejection", "CONNECTION_CLOSED"],
      ["error", "unhandled exception", "TypeError"],
    ]);
    // N3: the error's words, never its stack.
    expect(out).not.toContain("at ");
    expect(lines).toContain('process_unhandled_errors_total{kind="rejection"} 1');
    expect(lines).toContain('process_unhandled_errors_total{kind="exception"} 1');
  });

  test("X2 (v5): before the service exists, an error nobody handled (a failed start) still stops the process: exit 1 and one line", async () => {
    const child = Bun.spawn(
      [process.execPath, join(import.meta.dir, "fixtures/unhandled.ts"), "--before-start"],
      { stdout: "pipe", stderr: "pipe" },
    );
    const [out, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
    expect(code).toBe(1);
    const lines = out.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toMatchObject({
      level: "error",
      msg: "fixture cannot start: unhandled exception",
      error: "no database",
    });
  });
});

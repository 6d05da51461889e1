import { describe, expect, test } from "bun:test";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { runToEnd } from "@commerce/testing/launch";

const writer = join(import.meta.dir, "fixtures/log-writer.ts");
const report = (stderr: string) =>
  JSON.parse(stderr.split("\n").find((line) => line.startsWith("{")) ?? "{}") as {
    dropped: number;
    rss_growth_mib: number;
  };

describe("logOutput: log lines on stdout under back-pressure (O6, O9)", () => {
  test("a reader that keeps up gets every line in order, the one logged right before exit too", async () => {
    const { out, err, code } = await runToEnd([process.execPath, writer], {
      env: { ...process.env, LINES: "20000", PER_TURN: "100" },
    });
    expect(code).toBe(0);
    const lines = out
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines).toHaveLength(20001);
    expect(lines.slice(0, -1).every((line, i) => line.n === i)).toBe(true);
    expect(lines.at(-1)).toEqual({ last: true });
    expect(report(err).dropped).toBe(0);
  });

  test("a reader that stops reading: memory stays bounded, the lines it missed are counted, exit is not held up", async () => {
    // A real pipe to a real process that reads 64 KiB and then stops (its `sleep` holds the pipe).
    const shell = spawn(
      "sh",
      ["-c", `"${process.execPath}" "${writer}" | { head -c 65536 >/dev/null; exec sleep 60; }`],
      {
        env: { ...process.env, LINES: "300000", PER_TURN: "5000" },
        stdio: ["ignore", "ignore", "pipe"],
        detached: true,
      },
    );
    try {
      let err = "";
      shell.stderr?.on("data", (chunk) => {
        err += chunk;
      });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`the writer did not finish: ${err}`)),
          60_000,
        );
        shell.stderr?.on("data", () => {
          if (err.includes("exiting")) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      const { dropped, rss_growth_mib } = report(err);
      // About 60 MB were logged; the pipe and the bounded queue held well under a megabyte of it.
      expect(dropped).toBeGreaterThan(290_000);
      expect(rss_growth_mib).toBeLessThan(32);
    } finally {
      if (shell.pid) process.kill(-shell.pid, "SIGKILL");
    }
  });
});

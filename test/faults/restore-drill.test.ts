import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { runRestoreDrill } from "../../scripts/restore-drill/drill";

// A three-node Patroni cluster (about 15 s), a backup, two short streams and a restore.
setDefaultTimeout(300_000);

describe("X6: backups that restore (pgBackRest on the Patroni path)", () => {
  test("X6: a point-in-time restore to T, after a table emptied by mistake, brings back everything committed before T and nothing after; the services start on it and re-sent payments bring it forward, none applied twice", async () => {
    const lines: string[] = [];
    const result = await runRestoreDrill({
      ordersBeforeT: 8,
      ordersAfterT: 3,
      base: 27400,
      log: (line) => lines.push(line),
    });
    console.log(lines.join("\n"));
    expect(result.invariants.length).toBe(9);
    expect(result.invariants.filter((invariant) => !invariant.held)).toEqual([]);
    // At least the orders asked for before T (the shop goes on while the backup runs), and after.
    expect(Number(result.figures["orders before T"])).toBeGreaterThanOrEqual(8);
    expect(result.figures["orders after T"]).toBe(3);
    expect(result.figures["orders emptied by the mistake"]).toBe(
      Number(result.figures["orders before T"]) + 3,
    );
    expect(result.restoredLog).toContain("recovery stopping before commit");
  });
});

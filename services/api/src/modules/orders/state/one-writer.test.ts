import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

/**
 * The structure the state machine rests on (L1, R5, M3): whatever moves an order goes through
 * this folder, so a side effect added to a move (a webhook on `orders.paid`) is added once. A
 * write that bypasses it would pass every behaviour test, so this test reads the source.
 */
const apiSrc = join(import.meta.dir, "../../..");
const stateDir = import.meta.dir;

const productFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return productFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });

/** Every line of product code outside the state machine that matches `pattern`. */
const outsideState = (pattern: RegExp) =>
  productFiles(apiSrc)
    .filter((file) => !file.startsWith(stateDir))
    .flatMap((file) =>
      readFileSync(file, "utf8")
        .split("\n")
        .flatMap((line, i) => (pattern.test(line) ? [`${relative(apiSrc, file)}:${i + 1}`] : [])),
    );

const occurrences = (pattern: RegExp) =>
  productFiles(stateDir).reduce(
    (n, file) => n + (readFileSync(file, "utf8").match(new RegExp(pattern, "gi"))?.length ?? 0),
    0,
  );

const statusWrite =
  /update\s+(api\.orders|\$\{orders\})|\.update\(\s*orders\s*\)|set\s+status\s*=/i;
const timelineWrite = /insert\s+into\s+api\.order_events|\.insert\(\s*orderEvents\s*\)/i;
const outboxWrite = /insert\s+into\s+api\.outbox|\.insert\(\s*outbox\s*\)/i;
/** An `orders.*` message id is `order-<event>-...` (section 11); a string starting so spells one. */
const messageIdSpelling = /["'`]order-/;

describe("one way to move an order", () => {
  test("L1, R5: only the state machine writes an order's status (SQL or drizzle)", () => {
    expect(outsideState(statusWrite)).toEqual([]);
    // And within it, one statement moves orders, for one order and for a batch alike; the other
    // counts a refund the provider made (F4: `refunded_amount`) and moves nothing by itself.
    expect(occurrences(/update\s+api\.orders/)).toBe(2);
    expect(occurrences(/update\s+api\.orders\s+o?\s*set\s+status/)).toBe(1);
  });

  test("R5, T1, M3: only the state machine writes timeline entries and outbox rows", () => {
    expect(outsideState(timelineWrite)).toEqual([]);
    expect(outsideState(outboxWrite)).toEqual([]);
    expect(occurrences(/insert\s+into\s+api\.outbox/)).toBe(1);
  });

  test("M3: one place spells each orders.* message id", () => {
    expect(outsideState(messageIdSpelling)).toEqual([]);
    // `order-<event>-<order_id>` for the moves, `order-<event>-<notification_id>` for failures and
    // disputes (L5), which may happen more than once to an order.
    expect(occurrences(/["'`]order-\$\{/)).toBe(1);
  });

  test("the scan sees the files it guards (a moved folder would make it pass vacuously)", () => {
    const files = productFiles(apiSrc).map((file) => relative(apiSrc, file));
    expect(files).toContain("modules/orders/placing.ts");
    expect(files).toContain("modules/payment-inbox/batcher.ts");
    expect(files).toContain("modules/orders/state/transition.ts");
  });
});

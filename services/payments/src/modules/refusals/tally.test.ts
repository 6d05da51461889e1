import { describe, expect, test } from "bun:test";
import type { Sql } from "@commerce/shared/platform/database";
import { createLogger } from "@commerce/shared/platform/logger";
import { Metrics } from "@commerce/shared/platform/metrics";
import { unique } from "@commerce/testing/basics";
import { paymentsForFile } from "@commerce/testing/in-process";
import { listRefusals } from "./service";
import { RefusalTally } from "./tally";

const payments = await paymentsForFile();
const quiet = createLogger("error", {}, () => {});

const stored = (provider: string) =>
  payments.sql<{ reason: string; count: string; examples: { order_id: number | null }[] }[]>`
    select reason, sum(count)::text as count, jsonb_agg(examples) -> 0 as examples
    from payments.refused_notifications where provider = ${provider} group by reason`;

describe("the refusal tally (V4)", () => {
  test("V4, W7: 20,000 refusals in memory are a handful of groups of at most 5 examples each, written in one statement", async () => {
    // A provider name of its own, so this test reads only its own rows.
    const provider = unique("p");
    const tally = new RefusalTally(payments.sql, quiet, new Metrics());
    const reasons = ["signature_mismatch", "invalid_json", "too_large"];
    for (let i = 0; i < 20_000; i++)
      tally.add(provider, reasons[i % 3], { sourceIp: `10.0.${i % 250}.1`, orderId: i });
    const groups = (tally as unknown as { groups: Map<string, { examples: unknown[] }> }).groups;
    expect(groups.size).toBe(3);
    for (const group of groups.values()) expect(group.examples.length).toBe(5);
    await tally.flush();
    const rows = await stored(provider);
    expect(rows.map((row) => [row.reason, Number(row.count)]).sort()).toEqual([
      ["invalid_json", 6667],
      ["signature_mismatch", 6667],
      ["too_large", 6666],
    ]);
    for (const row of rows) expect(row.examples).toHaveLength(5);
  });

  test("V4: a write that fails keeps its groups for the next one; nothing counted is lost", async () => {
    const provider = unique("p");
    let down = true;
    const flaky = ((...args: Parameters<Sql>) => {
      if (down) return Promise.reject(Object.assign(new Error("down"), { code: "ECONNREFUSED" }));
      return (payments.sql as unknown as (...a: Parameters<Sql>) => unknown)(...args);
    }) as unknown as Sql;
    const tally = new RefusalTally(flaky, quiet, new Metrics());
    for (let i = 0; i < 7; i++)
      tally.add(provider, "credentials", { sourceIp: "::1", orderId: null });
    await tally.flush();
    for (let i = 0; i < 3; i++)
      tally.add(provider, "credentials", { sourceIp: "::1", orderId: 42 });
    down = false;
    await tally.flush();
    const [row] = await stored(provider);
    expect(Number(row.count)).toBe(10);
    expect(row.examples[0].order_id).toBe(42);
  });

  test("N21 (v5): a flood of forged refusals naming other orders cannot push a real one out of its order's view, and each order's count is its true count", async () => {
    const provider = unique("p");
    const tally = new RefusalTally(payments.sql, quiet, new Metrics());
    const real = 3_000_000_000_000 + Math.floor(Math.random() * 1e12);
    const pinned = real + 1;
    tally.add(provider, "signature_mismatch", { sourceIp: "203.0.113.9", orderId: real });
    // The same minute: a forged flood claiming other orders, and 12 refusals claiming one order.
    for (let i = 0; i < 2_000; i++)
      tally.add(provider, "signature_mismatch", {
        sourceIp: "198.51.100.66",
        orderId: real + 2 + i,
      });
    for (let i = 0; i < 12; i++)
      tally.add(provider, "signature_mismatch", { sourceIp: `198.51.100.${i}`, orderId: pinned });
    await tally.flush();

    const [ofReal] = await listRefusals(payments.sql, { orderId: real });
    expect(ofReal).toMatchObject({ provider, reason: "signature_mismatch", count: 1 });
    expect(ofReal.examples).toEqual([
      expect.objectContaining({ source_ip: "203.0.113.9", order_id: real }),
    ]);
    const [ofPinned] = await listRefusals(payments.sql, { orderId: pinned });
    expect(ofPinned.count).toBe(12);
    // The first five and the latest five (the two in the middle are only counted).
    expect(ofPinned.examples.length).toBe(10);
    expect(ofPinned.examples.map((e) => e.source_ip).sort()).toEqual(
      [0, 1, 2, 3, 4, 7, 8, 9, 10, 11].map((i) => `198.51.100.${i}`).sort(),
    );
    expect(ofPinned.examples.every((e) => e.order_id === pinned)).toBe(true);
    // The same again in a later write adds to the count and keeps the first example.
    tally.add(provider, "signature_mismatch", { sourceIp: "198.51.100.66", orderId: real });
    await tally.flush();
    const [again] = await listRefusals(payments.sql, { orderId: real });
    expect(again.count).toBe(2);
    expect(again.examples.map((e) => e.source_ip).sort()).toEqual(["198.51.100.66", "203.0.113.9"]);
  });
});

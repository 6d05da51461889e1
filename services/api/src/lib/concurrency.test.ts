import { describe, expect, test } from "bun:test";
import { AtMost, OneAtATimePerKey } from "./concurrency";

describe("one at a time per key", () => {
  test("M5: work for one key runs in the order asked, even when the first is the slowest", async () => {
    const queue = new OneAtATimePerKey<number>();
    const done: string[] = [];
    await Promise.all([
      queue.run(1, async () => {
        await Bun.sleep(30);
        done.push("paid");
      }),
      queue.run(1, async () => {
        done.push("refunded");
      }),
    ]);
    expect(done).toEqual(["paid", "refunded"]);
    expect(queue.size).toBe(0);
  });

  test("M5: work for different keys runs at once", async () => {
    const queue = new OneAtATimePerKey<number>();
    let running = 0;
    let most = 0;
    await Promise.all(
      [1, 2, 3, 4].map((key) =>
        queue.run(key, async () => {
          most = Math.max(most, ++running);
          await Bun.sleep(20);
          running--;
        }),
      ),
    );
    expect(most).toBe(4);
  });

  test("M5: a failure reaches its caller and does not stop the key's next work", async () => {
    const queue = new OneAtATimePerKey<number>();
    const failed = queue.run(7, async () => {
      await Bun.sleep(10);
      throw new Error("database down");
    });
    const next = queue.run(7, async () => "applied");
    await expect(failed).rejects.toThrow("database down");
    expect(await next).toBe("applied");
    expect(queue.size).toBe(0);
  });
});

describe("at most n at once", () => {
  test("M5: never more than the limit run at once, and every piece of work runs", async () => {
    const limit = new AtMost(3);
    let running = 0;
    let most = 0;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        limit.run(async () => {
          most = Math.max(most, ++running);
          await Bun.sleep(2);
          running--;
          return i;
        }),
      ),
    );
    expect(most).toBe(3);
    expect(results).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  test("M5: a failure frees its place", async () => {
    const limit = new AtMost(1);
    await expect(limit.run(async () => Promise.reject(new Error("down")))).rejects.toThrow("down");
    expect(await limit.run(async () => "next")).toBe("next");
  });
});

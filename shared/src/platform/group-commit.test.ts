import { describe, expect, test } from "bun:test";
import { GroupCommitQueue } from "./group-commit";

/** A writer that records its batches and answers each entry with its double, after `ms`. */
function recordingWriter(ms = 5, poison?: (n: number) => unknown) {
  const batches: number[][] = [];
  let running = 0;
  let mostAtOnce = 0;
  const write = async (batch: number[]) => {
    batches.push(batch);
    running++;
    mostAtOnce = Math.max(mostAtOnce, running);
    await Bun.sleep(ms);
    running--;
    for (const n of batch) {
      const error = poison?.(n);
      if (error) throw error;
    }
    return batch.map((n) => n * 2);
  };
  return { write, batches, mostAtOnce: () => mostAtOnce };
}

describe("group commit", () => {
  test("M5: at a trickle each entry is its own batch, written at once", async () => {
    const writer = recordingWriter();
    const queue = new GroupCommitQueue(writer.write);
    for (const n of [1, 2, 3]) expect(await queue.add(n)).toBe(n * 2);
    expect(writer.batches).toEqual([[1], [2], [3]]);
  });

  test("M5: in a burst, what arrives while a batch is written joins the next, within maxBatch and concurrency", async () => {
    const writer = recordingWriter();
    const queue = new GroupCommitQueue(writer.write, { concurrency: 2, maxBatch: 10 });
    const entries = Array.from({ length: 100 }, (_, i) => i);
    expect(await Promise.all(entries.map((n) => queue.add(n)))).toEqual(entries.map((n) => n * 2));
    expect(writer.batches.flat().sort((a, b) => a - b)).toEqual(entries);
    expect(Math.max(...writer.batches.map((b) => b.length))).toBe(10);
    expect(writer.batches.length).toBeLessThan(15);
    expect(writer.mostAtOnce()).toBe(2);
  });

  test("M5: sizeOf weighs entries, and a batch holds at least one entry however large", async () => {
    const writer = recordingWriter();
    const queue = new GroupCommitQueue(writer.write, { maxBatch: 10, sizeOf: (n) => n });
    await Promise.all([1, 20, 4, 5, 3].map((n) => queue.add(n)));
    expect(writer.batches).toEqual([[1], [20], [4, 5], [3]]);
  });

  test("M5: gather lets entries added in one turn of the event loop share the first batch", async () => {
    const writer = recordingWriter();
    const queue = new GroupCommitQueue(writer.write, { gather: true });
    await Promise.all([1, 2, 3].map((n) => queue.add(n)));
    expect(writer.batches).toEqual([[1, 2, 3]]);
  });

  test("H9: a batch that fails is written again entry by entry: only the entry that cannot be written fails, the others once each", async () => {
    const poisoned = Object.assign(new Error("invalid byte sequence"), { code: "22021" });
    const writer = recordingWriter(5, (n) => (n === 3 ? poisoned : undefined));
    const queue = new GroupCommitQueue(writer.write, { isolateFailures: true });
    await queue.add(0);
    const outcomes = await Promise.allSettled([1, 2, 3, 4].map((n) => queue.add(n)));
    expect(outcomes.map((o) => o.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
    ]);
    expect(writer.batches).toEqual([[0], [1, 2, 3, 4], [1], [2], [3], [4]]);
  });

  test("W6: a lost connection fails the whole batch at once: each entry alone would only fail again", async () => {
    const lost = Object.assign(new Error("connection"), { code: "CONNECTION_CLOSED" });
    const writer = recordingWriter(5, () => lost);
    const queue = new GroupCommitQueue(writer.write, { isolateFailures: true });
    void queue.add(0).catch(() => {});
    const outcomes = await Promise.allSettled([1, 2].map((n) => queue.add(n)));
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    expect(writer.batches).toEqual([[0], [1, 2]]);
  });

  test("without isolateFailures, a failed batch fails every entry of it", async () => {
    const writer = recordingWriter(5, (n) => (n === 2 ? new Error("no") : undefined));
    const queue = new GroupCommitQueue(writer.write, { gather: true });
    const outcomes = await Promise.allSettled([1, 2].map((n) => queue.add(n)));
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    expect(writer.batches).toEqual([[1, 2]]);
  });

  test("X2: an entry not written in time is refused at once and leaves its batch; a stuck batch gives back its slot", async () => {
    const batches: number[][] = [];
    let release: () => void = () => {};
    const stuck = new Promise<void>((resolve) => {
      release = resolve;
    });
    const write = async (batch: number[]) => {
      batches.push(batch);
      if (batch.includes(1)) await stuck; // a statement waiting for a connection that never opens
      return batch.map((n) => n * 2);
    };
    const queue = new GroupCommitQueue(write, {
      answerWithinMs: 50,
      timeout: () => new Error("retry"),
      abandonAfterMs: 100,
    });
    // Without the bound both would wait for release(), which comes only at the end. 2 waits behind the stuck batch.
    const outcomes = await Promise.allSettled([queue.add(1), queue.add(2)]);
    expect(outcomes.map((o) => (o.status === "rejected" ? String(o.reason) : o.status))).toEqual([
      "Error: retry",
      "Error: retry",
    ]);
    // The refused entry left the queue: it is never written behind its answer.
    await Bun.sleep(150);
    expect(batches).toEqual([[1]]);
    // After abandonAfterMs the slot is free again: a new entry is written although 1 still hangs.
    expect(await queue.add(3)).toBe(6);
    expect(batches).toEqual([[1], [3]]);
    release();
  });
});

import { describe, expect, test } from "bun:test";
import { createRequire } from "node:module";
import { join } from "node:path";

type Queue<T> = {
  readonly length: number;
  push(x: T): T;
  shift(): T | undefined;
  remove(x: T): T | null;
};
type QueueOf = <T>(initial?: T[]) => Queue<T>;

const installed = join(import.meta.dir, "../node_modules/postgres");
const require = createRequire(import.meta.url);
// Bun loads src/ (the package's "bun" export); Node's require loads cjs/, Workers load cf/.
const copies: [string, QueueOf][] = [
  ["src", (await import(join(installed, "src/queue.js"))).default],
  ["cf/src", (await import(join(installed, "cf/src/queue.js"))).default],
  ["cjs/src", require(join(installed, "cjs/src/queue.js"))],
];

/** An array that remembers the longest any array built from it (push, slice) ever was. */
class Tracked<T> extends Array<T> {
  static longest = 0;
  override push(...items: T[]): number {
    const length = super.push(...items);
    Tracked.longest = Math.max(Tracked.longest, length);
    return length;
  }
}

describe.each(copies)(
  "postgres.js Queue (%s), as patched by patches/postgres+3.4.9.patch",
  (_, Queue) => {
    test("a queue that never empties keeps a bounded backing array over a million push/shift pairs", () => {
      Tracked.longest = 0;
      const queue = Queue(Tracked.from([-3, -2, -1]));
      for (let i = 0; i < 1_000_000; i++) {
        queue.push(i);
        expect(queue.shift()).toBe(i - 3);
      }
      expect(queue.length).toBe(3);
      // The unpatched queue reset its array only when empty: it held a million slots here.
      expect(Tracked.longest).toBeLessThanOrEqual(8);
    });

    test("remove finds the element asked for among those still queued, after a million pairs", () => {
      const queue = Queue([{ n: -3 }, { n: -2 }, { n: -1 }]);
      const recent: { n: number }[] = [];
      let gone: { n: number } | undefined;
      for (let i = 0; i < 1_000_000; i++) {
        recent.push(queue.push({ n: i }));
        if (recent.length > 3) recent.shift();
        gone = queue.shift();
      }
      const [first, middle, last] = recent;
      expect(queue.remove(middle)).toBe(middle);
      expect(queue.remove(middle)).toBeNull();
      expect(gone && queue.remove(gone)).toBeNull();
      expect(queue.length).toBe(2);
      expect([queue.shift(), queue.shift(), queue.shift()]).toEqual([first, last, undefined]);
    });
  },
);

/**
 * Runs work for the same key one at a time, in the order it was asked for, while work for
 * different keys runs at once. The payment consumer keys by order, so one process applies an
 * order's messages in the order it received them (M5).
 */
export class OneAtATimePerKey<K> {
  /** The last work asked for each key that has not finished; the next for that key waits for it. */
  private readonly tails = new Map<K, Promise<void>>();

  async run<T>(key: K, work: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key);
    const result = before ? before.then(work) : work();
    const tail = result.then(
      () => {},
      () => {},
    );
    this.tails.set(key, tail);
    try {
      return await result;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Keys with work running or waiting. */
  get size(): number {
    return this.tails.size;
  }
}

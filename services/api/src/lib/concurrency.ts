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

/** Runs at most `limit` pieces of work at once; the rest wait their turn, first come first served. */
export class AtMost {
  private running = 0;
  private readonly queue: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((turn) => this.queue.push(turn));
    else this.running++;
    try {
      return await work();
    } finally {
      const next = this.queue.shift();
      if (next) next();
      else this.running--;
    }
  }
}

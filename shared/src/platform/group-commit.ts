import { databaseUnavailable } from "./database";

/**
 * Group commit: entries that arrive while a batch is being written join the next batch, so at a
 * trickle each entry is written at once, alone, and in a burst the statements (and commits) per
 * entry fall as the load rises. Each entry's promise settles only after its batch's statement.
 * The payments intake (W5, M5), the api's payment inbox (M2, M5) and the webhook attempt log
 * (H4, H9) are three uses of it.
 */
export type GroupCommitOptions<Entry> = {
  /** Batches being written at once; what arrives meanwhile waits for the next batch. */
  concurrency?: number;
  /** A batch's size at most, in `sizeOf` units; a batch holds at least one entry, however large. */
  maxBatch?: number;
  /** An entry's share of `maxBatch` (an Adyen request carries several notifications); 1 each. */
  sizeOf?: (entry: Entry) => number;
  /** Wait one turn of the event loop before a batch, so entries that arrived together share it. */
  gather?: boolean;
  /**
   * After a batch of several failed: write each entry alone, so that an entry which cannot be
   * written fails alone and the others are settled as if they had come alone. Not when the
   * error says the database is unavailable (`databaseUnavailable`): each would only fail again.
   */
  isolateFailures?: boolean;
  /**
   * X2: an entry not written within this many ms is rejected with `timeout()` at once (a request
   * still waiting for its batch leaves it), so no caller is held open while there is no primary.
   */
  answerWithinMs?: number;
  timeout?: () => Error;
  /**
   * X2: a batch still being written after this many ms gives back its slot (a query can wait for
   * a connection that never opens; its entries were answered by `answerWithinMs` already).
   */
  abandonAfterMs?: number;
};

type Waiting<Entry, Result> = {
  entry: Entry;
  done: (result: Result) => void;
  fail: (error: unknown) => void;
};

export class GroupCommitQueue<Entry, Result> {
  private waiting: Waiting<Entry, Result>[] = [];
  private running = 0;
  private scheduled = false;
  private readonly concurrency: number;
  private readonly maxBatch: number;
  private readonly sizeOf: (entry: Entry) => number;

  /** `write` stores a batch in one statement and answers per entry, in the batch's order. */
  constructor(
    private readonly write: (batch: Entry[]) => Promise<Result[]>,
    private readonly options: GroupCommitOptions<Entry> = {},
  ) {
    this.concurrency = options.concurrency ?? 1;
    this.maxBatch = options.maxBatch ?? 256;
    this.sizeOf = options.sizeOf ?? (() => 1);
  }

  /** Writes `entry` with its batch; resolves with its result once the batch is written. */
  add(entry: Entry): Promise<Result> {
    return new Promise((done, fail) => {
      const waiting = { entry, done, fail };
      const { answerWithinMs, timeout } = this.options;
      if (answerWithinMs !== undefined) {
        const timer = setTimeout(() => {
          const at = this.waiting.indexOf(waiting);
          if (at >= 0) this.waiting.splice(at, 1);
          fail(timeout?.() ?? new Error(`not written within ${answerWithinMs} ms`));
        }, answerWithinMs);
        waiting.done = (result) => {
          clearTimeout(timer);
          done(result);
        };
        waiting.fail = (error) => {
          clearTimeout(timer);
          fail(error);
        };
      }
      this.waiting.push(waiting);
      this.schedule();
    });
  }

  private schedule(): void {
    if (!this.options.gather) {
      this.flush();
      return;
    }
    if (this.scheduled || this.running >= this.concurrency) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.running < this.concurrency && this.waiting.length) {
      let size = 0;
      let take = 0;
      while (take < this.waiting.length) {
        size += this.sizeOf(this.waiting[take].entry);
        if (take > 0 && size > this.maxBatch) break;
        take++;
      }
      const batch = this.waiting.splice(0, take);
      this.running++;
      let freed = false;
      const free = () => {
        if (freed) return;
        freed = true;
        clearTimeout(abandon);
        this.running--;
        if (this.waiting.length) this.schedule();
      };
      const { abandonAfterMs } = this.options;
      const abandon = abandonAfterMs === undefined ? undefined : setTimeout(free, abandonAfterMs);
      void this.commit(batch).finally(free);
    }
  }

  private async commit(batch: Waiting<Entry, Result>[]): Promise<void> {
    try {
      const results = await this.write(batch.map((waiting) => waiting.entry));
      batch.forEach((waiting, i) => {
        waiting.done(results[i]);
      });
    } catch (error) {
      if (!this.options.isolateFailures || batch.length === 1 || databaseUnavailable(error)) {
        for (const waiting of batch) waiting.fail(error);
        return;
      }
      // One after another, in the order they came: of two entries with the same key, the first
      // is stored and the later one is its duplicate (W5), as they would be had each come alone.
      for (const waiting of batch) await this.commit([waiting]);
    }
  }
}

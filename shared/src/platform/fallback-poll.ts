/**
 * A fallback poll that costs next to nothing while there is nothing to do (issue 38: with no
 * traffic, the relays', the dispatcher's and the refund worker's polls once a second were 0.024
 * of the services' 0.056 cores). It polls every `baseMs` while it finds work; each poll that
 * finds none doubles the wait, up to `maxMs`; work found (`busy`) brings it back to `baseMs`.
 * What a process schedules itself (a retry in 5 s) it asks for with `wakeIn`, so its own retries
 * keep their time; the poll only catches what another process left (a lease that expired, a
 * row a replica committed and did not publish), at most `maxMs` late.
 */
export class FallbackPoll {
  private interval: number;
  private timer?: ReturnType<typeof setTimeout>;
  private readonly wakes = new Set<ReturnType<typeof setTimeout>>();
  private running = false;

  constructor(
    private readonly poll: () => void,
    private readonly baseMs = 1000,
    private readonly maxMs = 8000,
  ) {
    this.interval = baseMs;
  }

  start(): void {
    this.running = true;
    this.interval = this.baseMs;
    this.schedule();
  }

  /** The last poll (or a kick) found work: poll again after `baseMs`. */
  busy(): void {
    if (!this.running || this.interval === this.baseMs) return;
    this.interval = this.baseMs;
    this.schedule();
  }

  /** Something of this process's is due in `delayMs` (a retry): poll then. */
  wakeIn(delayMs: number): void {
    if (!this.running) return;
    const wake = setTimeout(() => {
      this.wakes.delete(wake);
      this.busy();
      this.poll();
    }, delayMs);
    this.wakes.add(wake);
  }

  stop(): void {
    this.running = false;
    clearTimeout(this.timer);
    for (const wake of this.wakes) clearTimeout(wake);
    this.wakes.clear();
  }

  /** The wait before the next poll, as it stands. */
  get waitMs(): number {
    return this.interval;
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.interval = Math.min(this.maxMs, this.interval * 2);
      this.schedule();
      this.poll();
    }, this.interval);
  }
}

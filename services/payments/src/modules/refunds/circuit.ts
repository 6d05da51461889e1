/**
 * F7: a provider's circuit. After `threshold` calls in a row that got no definite answer
 * (timeouts, resets, 5xx, 409, 429) it opens for `coolDownMs`: no call goes to that provider, so
 * a provider that is down is not hammered and its refunds wait (they are asked again later with
 * their keys). After the cool-down one round of calls is let through; a definite answer closes
 * it, another failure opens it again.
 */
export class ProviderCircuit {
  private failures = 0;
  private openUntil = 0;

  constructor(
    readonly provider: string,
    private readonly threshold = 5,
    private readonly coolDownMs = 30_000,
  ) {}

  /** Whether a call may go to the provider now; while open, how long until it may. */
  allows(now = Date.now()): { allowed: true } | { allowed: false; waitMs: number } {
    return now >= this.openUntil
      ? { allowed: true }
      : { allowed: false, waitMs: this.openUntil - now };
  }

  /** Records a call's result; answers `opened` or `closed` when the circuit changed. */
  record(definite: boolean, now = Date.now()): "opened" | "closed" | undefined {
    if (definite) {
      const wasOpen = this.failures >= this.threshold;
      this.failures = 0;
      this.openUntil = 0;
      return wasOpen ? "closed" : undefined;
    }
    this.failures++;
    if (this.failures < this.threshold) return undefined;
    this.openUntil = now + this.coolDownMs;
    return this.failures === this.threshold ? "opened" : undefined;
  }

  /** Open (or waiting to try again after its cool-down), for /ready's detail and the metric. */
  get open(): boolean {
    return this.failures >= this.threshold;
  }

  /** What /ready says of it while open; undefined while closed. */
  note(): string | undefined {
    if (!this.open) return undefined;
    return `circuit open after ${this.failures} calls without a definite answer; refunds wait and are asked again`;
  }
}

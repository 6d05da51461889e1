import { RateLimitedError } from "./errors";

export type RateLimitConfig = { ratePerSecond: number; burst: number };

/** A token bucket per client key (W7); a rate of 0 turns it off. */
export class RateLimiter {
  private buckets = new Map<string, { tokens: number; at: number }>();
  private readonly burst: number;

  constructor(
    private readonly config: RateLimitConfig,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.burst = Math.max(config.burst, config.ratePerSecond, 1);
  }

  get enabled(): boolean {
    return this.config.ratePerSecond > 0;
  }

  /** Takes one token for `key` or throws 429 with the seconds until one is back. */
  take(key: string): void {
    if (!this.enabled) return;
    const now = this.now();
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(
      this.burst,
      bucket.tokens + ((now - bucket.at) / 1000) * this.config.ratePerSecond,
    );
    bucket.at = now;
    if (bucket.tokens < 1) {
      this.buckets.set(key, bucket);
      throw new RateLimitedError(
        Math.max(1, Math.ceil((1 - bucket.tokens) / this.config.ratePerSecond)),
      );
    }
    bucket.tokens -= 1;
    this.buckets.set(key, bucket);
    if (this.buckets.size > 100_000) this.sweep(now);
  }

  /**
   * The RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10/11) for
   * `key`, read without taking a token; only the policy while the caller is not known yet, and
   * nothing when the limit is off. A token bucket is told as the quota `q` = burst over the
   * window `w` it takes to refill from empty, so a client keeping to q requests in any w seconds
   * never meets a 429; `r` is the whole tokens left and `t` the seconds until the bucket is full.
   */
  headers(key?: string): Record<string, string> {
    if (!this.enabled) return {};
    const rate = this.config.ratePerSecond;
    const policy = {
      "ratelimit-policy": `"default";q=${this.burst};w=${Math.ceil(this.burst / rate)}`,
    };
    if (key === undefined) return policy;
    const bucket = this.buckets.get(key);
    const tokens = bucket
      ? Math.min(this.burst, bucket.tokens + ((this.now() - bucket.at) / 1000) * rate)
      : this.burst;
    const full = Math.ceil((this.burst - tokens) / rate);
    return { ...policy, ratelimit: `"default";r=${Math.floor(tokens)};t=${full}` };
  }

  /** Forget full buckets so a flood of distinct keys cannot grow the map without bound. */
  private sweep(now: number): void {
    for (const [key, bucket] of this.buckets) {
      const refilled = bucket.tokens + ((now - bucket.at) / 1000) * this.config.ratePerSecond;
      if (refilled >= this.burst) this.buckets.delete(key);
    }
  }
}

/** The client address: the first `X-Forwarded-For` hop behind a trusted proxy, else the socket's. */
export function clientIp(
  request: Request,
  socketIp: string | undefined,
  trustProxy: boolean,
): string {
  if (trustProxy) {
    const forwarded = request.headers.get("x-forwarded-for")?.split(",")[0]?.trim();
    if (forwarded) return forwarded;
  }
  return socketIp ?? "unknown";
}

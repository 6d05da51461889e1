import { isIP } from "node:net";
import { RateLimitedError } from "./errors";

export type RateLimitConfig = { ratePerSecond: number; burst: number };

/** N2: the most buckets a limiter keeps; past it the least recently used are forgotten. */
export const maxBuckets = 100_000;

type Bucket = { tokens: number; at: number };

/**
 * A token bucket per client key (W7); a rate of 0 turns it off. Buckets live in two generations
 * of half the capacity each: a key is looked up in both and lives on in the recent one; when the
 * recent one is full, the older one is dropped whole. So the map never holds more than the
 * capacity and forgetting costs O(1), whatever a flood of distinct keys does.
 */
export class RateLimiter {
  private recent = new Map<string, Bucket>();
  private older = new Map<string, Bucket>();
  private readonly burst: number;

  constructor(
    private readonly config: RateLimitConfig,
    private readonly now: () => number = () => performance.now(),
    private readonly capacity = maxBuckets,
  ) {
    this.burst = Math.max(config.burst, config.ratePerSecond, 1);
  }

  get enabled(): boolean {
    return this.config.ratePerSecond > 0;
  }

  /** How many buckets are held now. */
  get size(): number {
    return this.recent.size + this.older.size;
  }

  /** Takes one token for `key` or throws 429 with the seconds until one is back. */
  take(key: string): void {
    if (!this.enabled) return;
    const now = this.now();
    const bucket = this.bucketOf(key, now);
    bucket.tokens = Math.min(
      this.burst,
      bucket.tokens + ((now - bucket.at) / 1000) * this.config.ratePerSecond,
    );
    bucket.at = now;
    if (bucket.tokens < 1)
      throw new RateLimitedError(
        Math.max(1, Math.ceil((1 - bucket.tokens) / this.config.ratePerSecond)),
      );
    bucket.tokens -= 1;
  }

  /**
   * N21: takes one token for `key` if there is one, and never refuses: for a request refused
   * before the rate limit is checked (413, 415 come first, W1), which still costs its sender.
   */
  spend(key: string): void {
    try {
      this.take(key);
    } catch (error) {
      if (!(error instanceof RateLimitedError)) throw error;
    }
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
    const bucket = this.recent.get(key) ?? this.older.get(key);
    const tokens = bucket
      ? Math.min(this.burst, bucket.tokens + ((this.now() - bucket.at) / 1000) * rate)
      : this.burst;
    const full = Math.ceil((this.burst - tokens) / rate);
    return { ...policy, ratelimit: `"default";r=${Math.floor(tokens)};t=${full}` };
  }

  private bucketOf(key: string, now: number): Bucket {
    const recent = this.recent.get(key);
    if (recent) return recent;
    const bucket = this.older.get(key) ?? { tokens: this.burst, at: now };
    this.older.delete(key);
    if (this.recent.size >= this.capacity / 2) {
      this.older = this.recent;
      this.recent = new Map();
    }
    this.recent.set(key, bucket);
    return bucket;
  }
}

/** The longest textual IP address (an IPv4-mapped IPv6 address written out in full). */
const maxAddressLength = 45;

/** An IPv4 or IPv6 address as text, without a zone id (which means nothing off its own host). */
export const isAddress = (text: string) =>
  text.length <= maxAddressLength && !text.includes("%") && isIP(text) !== 0;

/**
 * The client address (N2). Behind `trustedHops` proxies that each append the address they saw to
 * `X-Forwarded-For`, the entry that many places from the right is what the outermost proxy saw;
 * entries left of it are the client's own words. Anything but a valid IP address there, too few
 * entries, or no trusted proxies at all: the socket's address.
 */
export function clientIp(
  request: Request,
  socketIp: string | undefined,
  trustedHops: number,
): string {
  if (trustedHops > 0) {
    const entries = request.headers.get("x-forwarded-for")?.split(",") ?? [];
    const candidate = entries[entries.length - trustedHops]?.trim();
    if (candidate !== undefined && isAddress(candidate)) return unmapped(candidate);
  }
  return socketIp === undefined ? "unknown" : unmapped(socketIp);
}

/** The eight 16-bit groups of an IPv6 address (a valid one: `isIP(text) === 6`). */
function ipv6Groups(text: string): number[] {
  let rest = text;
  const tail: number[] = [];
  // An IPv4 address written in the last 32 bits (`::ffff:198.51.100.7`).
  const dotted = rest.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    const [a, b, c, d] = dotted[2].split(".").map(Number);
    tail.push((a << 8) | b, (c << 8) | d);
    rest = `${dotted[1]}0`;
    rest = rest.endsWith("::0") ? rest.slice(0, -1) : rest.slice(0, -2);
  }
  const [head, after] = rest.includes("::") ? rest.split("::") : [rest, undefined];
  const parse = (part: string | undefined) =>
    part ? part.split(":").map((group) => Number.parseInt(group, 16)) : [];
  const left = parse(head);
  const right = parse(after);
  const missing = 8 - tail.length - left.length - right.length;
  return [...left, ...(after === undefined ? [] : Array(missing).fill(0)), ...right, ...tail];
}

/** N11: an IPv4-mapped IPv6 address (`::ffff:198.51.100.7`) as the IPv4 address it maps. */
export function unmapped(address: string): string {
  if (isIP(address) !== 6 || !/^[0:]*:ffff:/i.test(address)) return address;
  const groups = ipv6Groups(address);
  if (groups.slice(0, 5).some((g) => g !== 0) || groups[5] !== 0xffff) return address;
  return [groups[6] >> 8, groups[6] & 255, groups[7] >> 8, groups[7] & 255].join(".");
}

/**
 * N11: the rate-limit key of a client address. An IPv6 client usually holds a whole /64 (and can
 * take any address in it), so the /64 is the client; an IPv4-mapped address is its IPv4 address.
 */
export function rateLimitKey(address: string): string {
  const plain = unmapped(address);
  if (isIP(plain) !== 6) return plain;
  const groups = ipv6Groups(plain.split("%")[0]);
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(":")}::/64`;
}

import { describe, expect, test } from "bun:test";
import { RateLimitedError } from "./errors";
import { clientIp, maxBuckets, RateLimiter } from "./rate-limit";

describe("rate limiter", () => {
  test("W7: a bucket allows its burst, refuses with Retry-After, then refills at the rate", () => {
    let now = 0;
    const limiter = new RateLimiter({ ratePerSecond: 2, burst: 3 }, () => now);
    for (let i = 0; i < 3; i++) limiter.take("1.2.3.4");
    let refused: unknown;
    try {
      limiter.take("1.2.3.4");
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).headers).toEqual({ "retry-after": "1" });
    limiter.take("5.6.7.8");
    now = 500;
    limiter.take("1.2.3.4");
    expect(() => limiter.take("1.2.3.4")).toThrow(RateLimitedError);
  });

  test("D4: RateLimit-Policy tells the quota, RateLimit what is left and when the bucket is full", () => {
    let now = 0;
    const limiter = new RateLimiter({ ratePerSecond: 50, burst: 100 }, () => now);
    const policy = '"default";q=100;w=2';
    expect(limiter.headers()).toEqual({ "ratelimit-policy": policy });
    expect(limiter.headers("alice")).toEqual({
      "ratelimit-policy": policy,
      ratelimit: '"default";r=100;t=0',
    });
    for (let i = 0; i < 100; i++) limiter.take("alice");
    expect(limiter.headers("alice").ratelimit).toBe('"default";r=0;t=2');
    now = 1000;
    expect(limiter.headers("alice").ratelimit).toBe('"default";r=50;t=1');
    expect(new RateLimiter({ ratePerSecond: 0, burst: 0 }).headers("alice")).toEqual({});
  });

  test("W7: a rate of 0 turns limiting off", () => {
    const limiter = new RateLimiter({ ratePerSecond: 0, burst: 0 });
    for (let i = 0; i < 10_000; i++) limiter.take("k");
    expect(limiter.enabled).toBe(false);
  });

  test("W7: X-Forwarded-For is used only behind a trusted proxy", () => {
    const request = new Request("http://x/", {
      headers: { "x-forwarded-for": "9.9.9.9, 10.0.0.1" },
    });
    expect(clientIp(request, "10.0.0.2", 1)).toBe("10.0.0.1");
    expect(clientIp(request, "10.0.0.2", 0)).toBe("10.0.0.2");
  });
});

describe("client address and bucket bound", () => {
  const withXff = (xff: string) =>
    new Request("http://x/", { headers: { "x-forwarded-for": xff } });

  test("N2: the client is the N-th X-Forwarded-For entry from the right, when it is an IP address", () => {
    const request = withXff("6.6.6.6, 9.9.9.9, 10.0.0.1");
    expect(clientIp(request, "10.0.0.9", 0)).toBe("10.0.0.9");
    expect(clientIp(request, "10.0.0.9", 1)).toBe("10.0.0.1");
    expect(clientIp(request, "10.0.0.9", 2)).toBe("9.9.9.9");
    expect(clientIp(request, "10.0.0.9", 3)).toBe("6.6.6.6");
    expect(clientIp(request, "10.0.0.9", 4)).toBe("10.0.0.9");
    expect(clientIp(withXff(" 2001:db8::1 "), "10.0.0.9", 1)).toBe("2001:db8::1");
    for (const bad of ["x".repeat(15_000), "1.2.3.4:80", "[::1]", "fe80::1%eth0", "01.2.3.4", ""])
      expect(clientIp(withXff(`1.2.3.4, ${bad}`), "10.0.0.9", 1)).toBe("10.0.0.9");
    expect(clientIp(new Request("http://x/"), "10.0.0.9", 1)).toBe("10.0.0.9");
  });

  test("N2: 200 000 distinct clients leave at most 100 000 buckets, the least recently used dropped", () => {
    const limiter = new RateLimiter({ ratePerSecond: 1, burst: 1 }, () => 0);
    limiter.take("keep");
    for (let i = 0; i < 200_000; i++) {
      limiter.take(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
      if (i % 50_000 === 0) expect(() => limiter.take("keep")).toThrow(RateLimitedError);
    }
    expect(limiter.size).toBeLessThanOrEqual(maxBuckets);
    expect(limiter.size).toBeGreaterThanOrEqual(maxBuckets / 2);
    expect(() => limiter.take("keep")).toThrow(RateLimitedError);
    expect(() => limiter.take("10.0.0.0")).not.toThrow();
  });
});

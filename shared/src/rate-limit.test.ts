import { describe, expect, test } from "bun:test";
import { RateLimitedError } from "./errors";
import { clientIp, RateLimiter } from "./rate-limit";

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
    expect(clientIp(request, "10.0.0.1", true)).toBe("9.9.9.9");
    expect(clientIp(request, "10.0.0.1", false)).toBe("10.0.0.1");
  });
});

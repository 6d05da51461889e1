import { describe, expect, test } from "bun:test";
import { ConfigError, readCommonConfig } from "./config";

const defaults = { port: 3000, ratePerSecond: 50, burst: 100 };

describe("configuration", () => {
  test("defaults apply and values are read", () => {
    const config = readCommonConfig({ DATABASE_URL: "postgres://u@h/db", PORT: "8080" }, defaults);
    expect(config).toMatchObject({
      port: 8080,
      natsUrl: "nats://127.0.0.1:4222",
      rateLimit: { ratePerSecond: 50, burst: 100 },
      trustProxy: 0,
      logLevel: "info",
    });
  });

  test("N2: TRUST_PROXY is a count of trusted proxies; false and true still mean 0 and 1", () => {
    const hops = (TRUST_PROXY: string) =>
      readCommonConfig({ DATABASE_URL: "postgres://u@h/db", TRUST_PROXY }, defaults).trustProxy;
    expect([hops("0"), hops("2"), hops("false"), hops("TRUE"), hops(" ")]).toEqual([0, 2, 0, 1, 0]);
    for (const bad of ["yes", "-1", "1.5", "100"])
      expect(() => hops(bad)).toThrow("TRUST_PROXY must be the number of trusted proxies");
  });

  test.each([
    [{}, "DATABASE_URL is required"],
    [{ DATABASE_URL: "mysql://x" }, "DATABASE_URL must be a URL starting with postgres:"],
    [{ DATABASE_URL: "postgres://u@h/db", PORT: "http" }, "PORT must be an integer"],
    [{ DATABASE_URL: "postgres://u@h/db", LOG_LEVEL: "loud" }, "LOG_LEVEL must be one of"],
    [
      { DATABASE_URL: "postgres://u@h/db", TRUST_PROXY: "maybe" },
      "TRUST_PROXY must be the number of trusted proxies",
    ],
  ])("a bad setting %j stops with one line naming the variable", (env, message) => {
    expect(() => readCommonConfig(env, defaults)).toThrow(ConfigError);
    expect(() => readCommonConfig(env, defaults)).toThrow(message);
  });
});

import { describe, expect, test } from "bun:test";
import { ConfigError } from "@commerce/shared/platform/env";
import { apiEnv, loadConfig } from "./config";

const required = { DATABASE_URL: "postgres://u@h/db", AUTH_JWT_SECRET: "s".repeat(32) };

describe("configuration", () => {
  test("one schema lists every variable with what it is for", () => {
    for (const [name, variable] of Object.entries(apiEnv.properties))
      expect([name, variable.description ?? ""]).toEqual([name, expect.stringMatching(/\w/)]);
  });

  test("defaults: port 3000, 50 requests a second and a burst of 100, USD, orders expire after 30 min", () => {
    expect(loadConfig(required)).toMatchObject({
      port: 3000,
      rateLimit: { ratePerSecond: 50, burst: 100 },
      storeCurrency: "USD",
      orderTtlSeconds: 1800,
      auth: { jwtSecret: required.AUTH_JWT_SECRET },
    });
  });

  test.each([
    [
      { DATABASE_URL: required.DATABASE_URL },
      "AUTH_PUBLIC_KEY, AUTH_JWKS_URL or AUTH_JWT_SECRET is required",
    ],
    [
      { ...required, STORE_CURRENCY: "usd" },
      'STORE_CURRENCY must be three upper-case letters, got "usd"',
    ],
    [
      { ...required, ORDER_TTL_SECONDS: "x" },
      'ORDER_TTL_SECONDS must be an integer from 0 to 31536000, got "x"',
    ],
  ])("a bad setting %j stops with one line naming the variable", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});

const base = {
  AUTH_JWT_SECRET: "a-secret-that-is-at-least-32-characters-long",
  DATABASE_URL: "postgres://localhost/x",
};

describe("the api's webhook settings", () => {
  test("H3, H7: defaults: the contract's schedule, 15 s, 5 days, https only, no private addresses", () => {
    expect(loadConfig(base).webhooks).toEqual({
      retrySchedule: [5, 300, 1800, 7200, 18000, 36000, 36000],
      timeoutSeconds: 15,
      disableAfterSeconds: 432000,
      allowHttp: false,
      allowPrivate: false,
    });
    expect(
      loadConfig({
        ...base,
        WEBHOOK_RETRY_SCHEDULE: " 1, 2 ,3",
        WEBHOOK_ALLOW_HTTP: "1",
        WEBHOOK_ALLOW_PRIVATE: "true",
      }).webhooks,
    ).toMatchObject({ retrySchedule: [1, 2, 3], allowHttp: true, allowPrivate: true });
  });

  test("H3, H7: a malformed value stops the start with one line naming the variable", () => {
    for (const [name, value] of [
      ["WEBHOOK_RETRY_SCHEDULE", "5,soon"],
      ["WEBHOOK_RETRY_SCHEDULE", "5,,300"],
      ["WEBHOOK_RETRY_SCHEDULE", "-5"],
      ["WEBHOOK_TIMEOUT_SECONDS", "0"],
      ["WEBHOOK_TIMEOUT_SECONDS", "15s"],
      ["WEBHOOK_DISABLE_AFTER_SECONDS", "0"],
      ["WEBHOOK_ALLOW_HTTP", "maybe"],
      ["WEBHOOK_ALLOW_PRIVATE", "2"],
    ]) {
      const load = () => loadConfig({ ...base, [name]: value });
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(new RegExp(`^${name} `));
      try {
        load();
      } catch (error) {
        expect((error as Error).message).not.toContain("\n");
      }
    }
  });
});

describe("the console's settings", () => {
  test("U1: PAYMENTS_PUBLIC_URL is where the console's browser reaches payments; unset, nowhere", () => {
    expect(loadConfig(base).paymentsPublicUrl).toBeUndefined();
    expect(
      loadConfig({ ...base, PAYMENTS_PUBLIC_URL: "https://pay.example.com" }).paymentsPublicUrl,
    ).toBe("https://pay.example.com");
    for (const bad of ["pay.example.com", "nats://pay.example.com"]) {
      const load = () => loadConfig({ ...base, PAYMENTS_PUBLIC_URL: bad });
      expect(load).toThrow(ConfigError);
      expect(load).toThrow(/^PAYMENTS_PUBLIC_URL must be a URL/);
    }
  });
});

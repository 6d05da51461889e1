import { describe, expect, test } from "bun:test";
import { ConfigError } from "@commerce/shared/config";
import { loadConfig } from "../src/config";

const required = {
  DATABASE_URL: "postgres://root@127.0.0.1:5432/test",
  PAYMENT_WEBHOOK_SECRETS: "whsec_a",
};

describe("configuration", () => {
  test("defaults: port 3001, 100 requests a second and a burst of 200 per source IP, 300 s tolerance", () => {
    expect(loadConfig(required)).toMatchObject({
      port: 3001,
      natsUrl: "nats://127.0.0.1:4222",
      rateLimit: { ratePerSecond: 100, burst: 200 },
      trustProxy: 0,
      logLevel: "info",
      webhook: { secrets: ["whsec_a"], toleranceSeconds: 300 },
    });
  });

  test("W2: PAYMENT_WEBHOOK_SECRETS is a comma-separated list for rotation", () => {
    const config = loadConfig({
      ...required,
      PAYMENT_WEBHOOK_SECRETS: "whsec_new, whsec_old",
      WEBHOOK_TOLERANCE_SECONDS: "60",
    });
    expect(config.webhook).toEqual({ secrets: ["whsec_new", "whsec_old"], toleranceSeconds: 60 });
  });

  test.each([
    [{ DATABASE_URL: required.DATABASE_URL }, "PAYMENT_WEBHOOK_SECRETS is required"],
    [
      { ...required, PAYMENT_WEBHOOK_SECRETS: "whsec_a,,whsec_b" },
      "PAYMENT_WEBHOOK_SECRETS must be",
    ],
    [{ ...required, PAYMENT_WEBHOOK_SECRETS: "whsec_a, " }, "PAYMENT_WEBHOOK_SECRETS must be"],
    [{ ...required, WEBHOOK_TOLERANCE_SECONDS: "5m" }, "WEBHOOK_TOLERANCE_SECONDS must be"],
    [{ ...required, WEBHOOK_TOLERANCE_SECONDS: "0" }, "WEBHOOK_TOLERANCE_SECONDS must be"],
    [{ ...required, RATE_LIMIT_RPS: "-1" }, "RATE_LIMIT_RPS must be"],
    [{ PAYMENT_WEBHOOK_SECRETS: "whsec_a" }, "DATABASE_URL is required"],
  ])("a bad setting %j stops with one line naming the variable", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});

import { describe, expect, test } from "bun:test";
import { ConfigError } from "@commerce/shared/platform/env";
import { loadConfig, paymentsEnv } from "../src/config";

const required = {
  DATABASE_URL: "postgres://root@127.0.0.1:5432/test",
  PAYMENT_WEBHOOK_SECRETS: "whsec_a_long_secret",
};

describe("configuration", () => {
  test("one schema lists every variable with what it is for", () => {
    for (const [name, variable] of Object.entries(paymentsEnv.properties))
      expect([name, variable.description ?? ""]).toEqual([name, expect.stringMatching(/\w/)]);
  });

  test("defaults: port 3001, 100 requests a second and a burst of 200 per source IP, 300 s tolerance", () => {
    expect(loadConfig(required)).toMatchObject({
      port: 3001,
      natsUrl: "nats://127.0.0.1:4222",
      rateLimit: { ratePerSecond: 100, burst: 200 },
      trustProxy: 0,
      logLevel: "info",
      webhook: { secrets: ["whsec_a_long_secret"], toleranceSeconds: 300 },
    });
  });

  test("V3: AUTH_* are optional: unset, payments starts without operator tokens; set, read as on the api", () => {
    expect(loadConfig(required).auth).toBeUndefined();
    const secret = "s".repeat(32);
    expect(loadConfig({ ...required, AUTH_JWT_SECRET: secret, AUTH_AUDIENCE: "ops" }).auth).toEqual(
      {
        jwtSecret: secret,
        jwksUrl: undefined,
        issuer: undefined,
        audience: "ops",
        maxTokenAgeSeconds: 86_400,
      },
    );
    expect(() => loadConfig({ ...required, AUTH_JWT_SECRET: "short" })).toThrow(
      "AUTH_JWT_SECRET must be at least 32 characters long",
    );
  });

  test("U1: CONSOLE_ORIGINS lists the console origins CORS lets in; unset, none; a path or a non-origin stops", () => {
    expect(loadConfig(required).consoleOrigins).toEqual([]);
    expect(
      loadConfig({
        ...required,
        CONSOLE_ORIGINS: "https://shop.example.com, http://127.0.0.1:3000",
      }).consoleOrigins,
    ).toEqual(["https://shop.example.com", "http://127.0.0.1:3000"]);
    for (const bad of [
      "https://shop.example.com/console",
      "shop.example.com",
      "*",
      "ftp://x.example",
    ])
      expect(() => loadConfig({ ...required, CONSOLE_ORIGINS: bad })).toThrow(
        /^CONSOLE_ORIGINS must be comma-separated origins/,
      );
  });

  test("W2: PAYMENT_WEBHOOK_SECRETS is a comma-separated list for rotation", () => {
    const config = loadConfig({
      ...required,
      PAYMENT_WEBHOOK_SECRETS: "whsec_new_long_secret, whsec_old_long_secret",
      WEBHOOK_TOLERANCE_SECONDS: "60",
    });
    expect(config.webhook).toEqual({
      secrets: ["whsec_new_long_secret", "whsec_old_long_secret"],
      toleranceSeconds: 60,
    });
  });

  test("G1, S1, Y1: Stripe and Adyen are off unless configured; their secrets are read as lists for rotation", () => {
    expect(loadConfig(required).providers).toEqual({
      mode: "test",
      stripe: undefined,
      adyen: undefined,
      api: { stripe: undefined, adyen: undefined },
    });
    const config = loadConfig({
      ...required,
      STRIPE_WEBHOOK_SECRETS: "whsec_first_secret_1, whsec_second_secret_2",
      ADYEN_HMAC_KEYS: `${"ab".repeat(32)},${"CD".repeat(16)}`,
      ADYEN_MERCHANT_ACCOUNTS: "ShopECOM, ShopPOS",
      ADYEN_WEBHOOK_USERNAME: "adyen",
      ADYEN_WEBHOOK_PASSWORD: "a-password",
    });
    expect(config.providers.stripe?.secrets).toEqual([
      "whsec_first_secret_1",
      "whsec_second_secret_2",
    ]);
    expect(config.providers.adyen?.hmacKeys.map((key) => key.length)).toEqual([32, 16]);
    expect(config.providers.adyen?.basic).toEqual({ username: "adyen", password: "a-password" });
    expect(config.providers.adyen?.merchantAccounts).toEqual(["ShopECOM", "ShopPOS"]);
  });

  test("F2, F3: the providers' API keys turn refunds on; a key of the other mode, or Adyen's without its webhook, stops the service; REFUND_GIVE_UP_HOURS defaults to 24", () => {
    const stripe = loadConfig({ ...required, STRIPE_API_KEY: "rk_test_abc123" }).providers.api;
    expect(stripe?.stripe).toEqual({ apiKey: "rk_test_abc123", url: "https://api.stripe.com" });
    expect(() =>
      loadConfig({ ...required, STRIPE_API_KEY: "sk_live_abc123", PAYMENT_MODE: "test" }),
    ).toThrow("STRIPE_API_KEY is a live key; PAYMENT_MODE is test");
    expect(() => loadConfig({ ...required, STRIPE_API_KEY: "pk_test_abc123" })).toThrow(
      "STRIPE_API_KEY must be",
    );
    expect(() => loadConfig({ ...required, ADYEN_API_KEY: "AQE-a-long-api-key" })).toThrow(
      "ADYEN_HMAC_KEYS and ADYEN_MERCHANT_ACCOUNTS are required with ADYEN_API_KEY",
    );
    const adyen = loadConfig({
      ...required,
      ADYEN_HMAC_KEYS: "ab".repeat(32),
      ADYEN_MERCHANT_ACCOUNTS: "ShopECOM",
      ADYEN_API_KEY: "AQE-a-long-api-key",
      ADYEN_CHECKOUT_URL: "http://127.0.0.1:9/v71/",
    }).providers.api?.adyen;
    expect(adyen).toEqual({
      apiKey: "AQE-a-long-api-key",
      checkoutUrl: "http://127.0.0.1:9/v71",
      merchantAccount: "ShopECOM",
    });
    expect(loadConfig(required).refundGiveUpMs).toBe(24 * 3_600_000);
    expect(() => loadConfig({ ...required, REFUND_GIVE_UP_HOURS: "0" })).toThrow(
      "REFUND_GIVE_UP_HOURS must be an integer from 1 to 720",
    );
  });

  test("G4: PAYMENT_MODE is test unless set to live; anything else stops the service", () => {
    expect(loadConfig(required).providers.mode).toBe("test");
    expect(loadConfig({ ...required, PAYMENT_MODE: "live" }).providers.mode).toBe("live");
    expect(() => loadConfig({ ...required, PAYMENT_MODE: "prod" })).toThrow(
      'PAYMENT_MODE must be one of live, test, got "prod"',
    );
  });

  test("G4: with ADYEN_HMAC_KEYS set, ADYEN_MERCHANT_ACCOUNTS is required (the service does not start)", () => {
    const adyen = { ...required, ADYEN_HMAC_KEYS: "ab".repeat(32) };
    expect(() => loadConfig(adyen)).toThrow(ConfigError);
    expect(() => loadConfig(adyen)).toThrow("ADYEN_MERCHANT_ACCOUNTS is required");
    expect(() => loadConfig({ ...required, ADYEN_MERCHANT_ACCOUNTS: "ShopECOM" })).toThrow(
      "ADYEN_HMAC_KEYS is required",
    );
  });

  test("W2: every webhook secret has at least 16 characters, or the service does not start", () => {
    const secrets = (PAYMENT_WEBHOOK_SECRETS: string) =>
      loadConfig({ ...required, PAYMENT_WEBHOOK_SECRETS }).webhook.secrets;
    expect(secrets("0123456789abcdef")).toEqual(["0123456789abcdef"]);
    for (const bad of ["whsec_dev", "0123456789abcde", "whsec_a_long_secret,short"]) {
      expect(() => secrets(bad)).toThrow(ConfigError);
      expect(() => secrets(bad)).toThrow(
        "PAYMENT_WEBHOOK_SECRETS: each secret must be at least 16 characters long",
      );
    }
  });

  test.each([
    [{ DATABASE_URL: required.DATABASE_URL }, "PAYMENT_WEBHOOK_SECRETS is required"],
    [
      { ...required, PAYMENT_WEBHOOK_SECRETS: "whsec_a_long_secret,,whsec_b_long_secret" },
      "PAYMENT_WEBHOOK_SECRETS must be",
    ],
    [
      { ...required, PAYMENT_WEBHOOK_SECRETS: "whsec_a_long_secret, " },
      "PAYMENT_WEBHOOK_SECRETS must be",
    ],
    [{ ...required, WEBHOOK_TOLERANCE_SECONDS: "5m" }, "WEBHOOK_TOLERANCE_SECONDS must be"],
    [{ ...required, WEBHOOK_TOLERANCE_SECONDS: "0" }, "WEBHOOK_TOLERANCE_SECONDS must be"],
    [{ ...required, RATE_LIMIT_RPS: "-1" }, "RATE_LIMIT_RPS must be"],
    [{ PAYMENT_WEBHOOK_SECRETS: "whsec_a_long_secret" }, "DATABASE_URL is required"],
    [{ ...required, PAYMENT_WEBHOOK_SECRETS: "whsec_dev" }, "PAYMENT_WEBHOOK_SECRETS: each secret"],
    [{ ...required, STRIPE_WEBHOOK_SECRETS: "whsec_short" }, "STRIPE_WEBHOOK_SECRETS must be"],
    [
      { ...required, STRIPE_WEBHOOK_SECRETS: "whsec_a_long_secret,,whsec_b_long" },
      "STRIPE_WEBHOOK_SECRETS must be",
    ],
    [{ ...required, ADYEN_HMAC_KEYS: "not-hex-at-all" }, "ADYEN_HMAC_KEYS must be"],
    [{ ...required, ADYEN_HMAC_KEYS: "ABCD" }, "ADYEN_HMAC_KEYS must be"],
    [{ ...required, ADYEN_WEBHOOK_USERNAME: "user" }, "ADYEN_HMAC_KEYS is required"],
    [
      {
        ...required,
        ADYEN_HMAC_KEYS: "ab".repeat(32),
        ADYEN_MERCHANT_ACCOUNTS: "ShopECOM",
        ADYEN_WEBHOOK_USERNAME: "user",
      },
      "ADYEN_WEBHOOK_PASSWORD must be set",
    ],
  ])("a bad setting %j stops with one line naming the variable", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});

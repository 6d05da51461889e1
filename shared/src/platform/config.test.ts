import { describe, expect, test } from "bun:test";
import { readAuthConfig } from "./auth/auth-config";
import { natsServers, readCommonConfig } from "./config";
import { ConfigError } from "./env";

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

  test("A2, V3: AUTH_* read the same for both services; required on the api, optional on payments", () => {
    const secret = "s".repeat(32);
    expect(
      readAuthConfig({ AUTH_JWT_SECRET: secret, AUTH_ISSUER: "i" }, { required: true }),
    ).toEqual({
      jwtSecret: secret,
      jwksUrl: undefined,
      publicKey: undefined,
      issuer: "i",
      audience: undefined,
      maxTokenAgeSeconds: 86_400,
    });
    expect(
      readAuthConfig(
        { AUTH_JWKS_URL: "https://id.example/jwks.json", AUTH_ISSUER: "i", AUTH_AUDIENCE: "a" },
        { required: true },
      ),
    ).toMatchObject({ jwksUrl: "https://id.example/jwks.json" });
    expect(readAuthConfig({}, { required: false })).toBeUndefined();
    expect(() => readAuthConfig({}, { required: true })).toThrow(
      "AUTH_PUBLIC_KEY, AUTH_JWKS_URL or AUTH_JWT_SECRET is required but none is set",
    );
    for (const required of [true, false]) {
      expect(() => readAuthConfig({ AUTH_JWT_SECRET: "short" }, { required })).toThrow(
        "AUTH_JWT_SECRET must be at least 32 characters long",
      );
      expect(() => readAuthConfig({ AUTH_JWKS_URL: "ftp://x" }, { required })).toThrow(
        "AUTH_JWKS_URL must be a URL starting with https: or http:",
      );
    }
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
    [{ DATABASE_URL: "mysql://x" }, "DATABASE_URL must start with postgres://"],
    [{ DATABASE_URL: "postgres://u@h/db", PORT: "http" }, "PORT must be an integer"],
    [{ DATABASE_URL: "postgres://u@h/db", LOG_LEVEL: "loud" }, "LOG_LEVEL must be one of"],
    [
      { DATABASE_URL: "postgres://u@h/db", TRUST_PROXY: "maybe" },
      "TRUST_PROXY must be the number of trusted proxies",
    ],
    [
      { DATABASE_URL: "postgres://u@h/db", NATS_USER: "api" },
      "NATS_USER and NATS_PASSWORD must be set together",
    ],
    [
      {
        DATABASE_URL: "postgres://u@h/db",
        NATS_URL: "nats://api:pw@nats:4222",
        NATS_USER: "api",
        NATS_PASSWORD: "pw",
      },
      "NATS_URL must not carry credentials when NATS_USER is set",
    ],
    [{ DATABASE_URL: "postgres://u@h/db", NATS_URL: "nats://api:@nats:4222" }, "NATS_URL has"],
    [{ DATABASE_URL: "postgres://u@h/db", NATS_URL: "nats://a:4222,,nats://b:4222" }, "NATS_URL"],
    [
      { DATABASE_URL: "postgres://u@h/db", NATS_URL: "nats://u:a@n1:4222,nats://u:b@n2:4222" },
      "NATS_URL lists different credentials",
    ],
    [{ DATABASE_URL: "postgres://u@h/db", STREAM_REPLICAS: "0" }, "STREAM_REPLICAS must be"],
    [{ DATABASE_URL: "postgres://u@h/db", STREAM_REPLICAS: "6" }, "STREAM_REPLICAS must be"],
    [{ DATABASE_URL: "postgres://u@h/db", STREAM_REPLICAS: "three" }, "STREAM_REPLICAS must be"],
  ])("a bad setting %j stops with one line naming the variable", (env, message) => {
    expect(() => readCommonConfig(env, defaults)).toThrow(ConfigError);
    expect(() => readCommonConfig(env, defaults)).toThrow(message);
  });

  describe("X1: a NATS cluster", () => {
    const base = { DATABASE_URL: "postgres://u@h/db" };

    test("STREAM_REPLICAS is 1 unless set, at most 5", () => {
      expect(readCommonConfig(base, defaults).streamReplicas).toBe(1);
      expect(readCommonConfig({ ...base, STREAM_REPLICAS: "3" }, defaults).streamReplicas).toBe(3);
    });

    test("NATS_URL lists the cluster's servers, comma-separated; credentials come out of each", () => {
      const config = readCommonConfig(
        { ...base, NATS_URL: "nats://api:pw@n1:4222, nats://api:pw@n2:4222,nats://n3:4222" },
        defaults,
      );
      expect(config.natsUrl).toBe("nats://n1:4222,nats://n2:4222,nats://n3:4222");
      expect(natsServers(config.natsUrl)).toEqual([
        "nats://n1:4222",
        "nats://n2:4222",
        "nats://n3:4222",
      ]);
      expect(config.natsCredentials).toEqual({ user: "api", pass: "pw" });
    });
  });

  describe("N1: NATS credentials", () => {
    const base = { DATABASE_URL: "postgres://u@h/db" };

    test("none by default", () => {
      expect(readCommonConfig(base, defaults).natsCredentials).toBeUndefined();
    });

    test("NATS_USER and NATS_PASSWORD", () => {
      const config = readCommonConfig(
        { ...base, NATS_URL: "nats://nats:4222", NATS_USER: "api", NATS_PASSWORD: "s3cret" },
        defaults,
      );
      expect(config.natsUrl).toBe("nats://nats:4222");
      expect(config.natsCredentials).toEqual({ user: "api", pass: "s3cret" });
    });

    test("in NATS_URL, taken out of the URL (the client ignores them there)", () => {
      const config = readCommonConfig(
        { ...base, NATS_URL: "nats://payments:4222%40x%3Ay@nats:4222" },
        defaults,
      );
      expect(config.natsUrl).toBe("nats://nats:4222");
      expect(config.natsCredentials).toEqual({ user: "payments", pass: "4222@x:y" });
    });

    test("a URL user without a password is a token", () => {
      const config = readCommonConfig({ ...base, NATS_URL: "nats://t0ken@nats:4222" }, defaults);
      expect(config.natsUrl).toBe("nats://nats:4222");
      expect(config.natsCredentials).toEqual({ token: "t0ken" });
    });
  });
});

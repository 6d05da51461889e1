import { ConfigError, type Env, read, readCommonConfig } from "@commerce/shared/config";

export type ApiConfig = ReturnType<typeof loadConfig>;

export function loadConfig(env: Env) {
  const jwtSecret = read.optional(env, "AUTH_JWT_SECRET");
  const jwksUrl = read.optional(env, "AUTH_JWKS_URL");
  if (!jwksUrl && !jwtSecret) throw new ConfigError("AUTH_JWT_SECRET is required but not set");
  if (jwtSecret && jwtSecret.length < 32)
    throw new ConfigError("AUTH_JWT_SECRET must be at least 32 characters long");
  const currency = read.string(env, "STORE_CURRENCY", "USD");
  if (!/^[A-Z]{3}$/.test(currency))
    throw new ConfigError(`STORE_CURRENCY must be three upper-case letters, got "${currency}"`);
  return {
    ...readCommonConfig(env, { port: 3000, ratePerSecond: 50, burst: 100 }),
    auth: {
      jwtSecret,
      jwksUrl: jwksUrl ? read.url(env, "AUTH_JWKS_URL", ["https:", "http:"]) : undefined,
      issuer: read.optional(env, "AUTH_ISSUER"),
      audience: read.optional(env, "AUTH_AUDIENCE"),
    },
    storeCurrency: currency,
    orderTtlSeconds: read.int(env, "ORDER_TTL_SECONDS", 1800, { max: 31_536_000 }),
  };
}

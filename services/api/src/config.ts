import {
  ConfigError,
  type Env,
  read,
  readAuthConfig,
  readCommonConfig,
} from "@commerce/shared/config";

export type ApiConfig = ReturnType<typeof loadConfig>;

export function loadConfig(env: Env) {
  const auth = readAuthConfig(env, { required: true });
  const currency = read.string(env, "STORE_CURRENCY", "USD");
  if (!/^[A-Z]{3}$/.test(currency))
    throw new ConfigError(`STORE_CURRENCY must be three upper-case letters, got "${currency}"`);
  return {
    ...readCommonConfig(env, { port: 3000, ratePerSecond: 50, burst: 100 }),
    auth,
    storeCurrency: currency,
    orderTtlSeconds: read.int(env, "ORDER_TTL_SECONDS", 1800, { max: 31_536_000 }),
  };
}

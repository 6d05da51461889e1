import {
  ConfigError,
  type Env,
  read,
  readAuthConfig,
  readCommonConfig,
} from "@commerce/shared/config";

const minSecretLength = 16;

export type PaymentsConfig = ReturnType<typeof loadConfig>;

export function loadConfig(env: Env) {
  const secrets = read
    .string(env, "PAYMENT_WEBHOOK_SECRETS")
    .split(",")
    .map((secret) => secret.trim());
  if (secrets.some((secret) => secret === ""))
    throw new ConfigError(
      "PAYMENT_WEBHOOK_SECRETS must be a comma-separated list of non-empty secrets",
    );
  // W2: a short secret can be guessed offline from one signed notification.
  if (secrets.some((secret) => secret.length < minSecretLength))
    throw new ConfigError(
      `PAYMENT_WEBHOOK_SECRETS: each secret must be at least ${minSecretLength} characters long`,
    );
  return {
    ...readCommonConfig(env, { port: 3001, ratePerSecond: 100, burst: 200 }),
    /** V3: the operator routes' tokens; undefined when unset, and those routes answer 503. */
    auth: readAuthConfig(env, { required: false }),
    webhook: {
      secrets,
      toleranceSeconds: read.int(env, "WEBHOOK_TOLERANCE_SECONDS", 300, { min: 1, max: 86_400 }),
    },
  };
}

import { createPublicKey, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { type Static, Type } from "@sinclair/typebox";
import { ConfigError, type Env, parseEnv, Var } from "../env";
import type { AuthConfig } from "./token-verifier";

/** A2, N6: the bearer-token variables, the same for both services; `authConfig` chooses. */
export const authVariables = {
  AUTH_PUBLIC_KEY: Var.optional(
    Var.text({
      description: "N6: PEM ES256/RS256 public key of the bearer tokens (newlines may be \\n)",
    }),
  ),
  AUTH_PUBLIC_KEY_FILE: Var.optional(
    Var.text({ description: "N6: a file holding AUTH_PUBLIC_KEY, instead of the key itself" }),
  ),
  AUTH_JWKS_URL: Var.optional(
    Var.url(["https:", "http:"], { description: "RS256/ES256 key set of the bearer tokens" }),
  ),
  AUTH_JWT_SECRET: Var.optional(
    Var.text({
      minLength: 32,
      secret: true,
      expected: "at least 32 characters long",
      description: "HS256 key of the bearer tokens, for local use",
    }),
  ),
  AUTH_ISSUER: Var.optional(
    Var.text({ description: "the tokens' required iss; required with a public key or JWKS" }),
  ),
  AUTH_AUDIENCE: Var.optional(
    Var.text({ description: "the tokens' required aud; required with a public key or JWKS" }),
  ),
  AUTH_MAX_TOKEN_AGE: Var.integer({
    default: 86_400,
    description:
      "N17: the longest life (exp - iat, in seconds) of an accepted token; 0 = unbounded",
  }),
};
const authEnv = Type.Object(authVariables);
type AuthVariables = Static<typeof authEnv>;

/**
 * A2, N6: `AUTH_PUBLIC_KEY` (a PEM ES256/RS256 public key) or `AUTH_JWKS_URL` (RS256/ES256 keys),
 * each requiring `AUTH_ISSUER` and `AUTH_AUDIENCE`; or, for local use, `AUTH_JWT_SECRET` (HS256).
 * Undefined when none is set and the service may run without (payments: its operator routes then
 * answer 503); else one is required.
 */
export function authConfig(vars: AuthVariables, options: { required: true }): AuthConfig;
export function authConfig(
  vars: AuthVariables,
  options: { required: boolean },
): AuthConfig | undefined;
export function authConfig(
  vars: AuthVariables,
  { required }: { required: boolean },
): AuthConfig | undefined {
  const { AUTH_JWT_SECRET: jwtSecret, AUTH_JWKS_URL: jwksUrl } = vars;
  const { AUTH_ISSUER: issuer, AUTH_AUDIENCE: audience } = vars;
  const publicKey = readPublicKey(vars);
  if (!jwksUrl && !jwtSecret && !publicKey) {
    if (required)
      throw new ConfigError(
        "AUTH_PUBLIC_KEY, AUTH_JWKS_URL or AUTH_JWT_SECRET is required but none is set",
      );
    return undefined;
  }
  if (publicKey && jwksUrl)
    throw new ConfigError("AUTH_PUBLIC_KEY and AUTH_JWKS_URL: set one of them, not both");
  // N6: a key anyone may read verifies tokens of whoever it was issued to; iss and aud say whom.
  if (publicKey || jwksUrl) {
    const by = publicKey ? "AUTH_PUBLIC_KEY" : "AUTH_JWKS_URL";
    if (!issuer) throw new ConfigError(`AUTH_ISSUER is required with ${by}`);
    if (!audience) throw new ConfigError(`AUTH_AUDIENCE is required with ${by}`);
  }
  return {
    // N6: with a public key or a JWKS the service holds no key that signs, even if one is set.
    jwtSecret: publicKey || jwksUrl ? undefined : jwtSecret,
    jwksUrl,
    publicKey,
    issuer,
    audience,
    maxTokenAgeSeconds: vars.AUTH_MAX_TOKEN_AGE,
  };
}

/**
 * N6: `AUTH_PUBLIC_KEY`, a PEM public key (newlines may be written as `\n`, as an environment
 * file needs), or `AUTH_PUBLIC_KEY_FILE`, a file holding one. ES256 (P-256) or RS256 (RSA of at
 * least 2048 bits). A private key is refused: the point is that the service cannot sign.
 */
function readPublicKey(vars: AuthVariables): AuthConfig["publicKey"] {
  const { AUTH_PUBLIC_KEY: inline, AUTH_PUBLIC_KEY_FILE: file } = vars;
  if (inline && file)
    throw new ConfigError("AUTH_PUBLIC_KEY and AUTH_PUBLIC_KEY_FILE: set one of them, not both");
  const name = file ? "AUTH_PUBLIC_KEY_FILE" : "AUTH_PUBLIC_KEY";
  let pem = inline?.replaceAll("\\n", "\n");
  if (file) {
    try {
      pem = readFileSync(file, "utf8");
    } catch {
      throw new ConfigError(`AUTH_PUBLIC_KEY_FILE cannot be read: ${file}`);
    }
  }
  if (pem === undefined) return undefined;
  if (/PRIVATE KEY/.test(pem))
    throw new ConfigError(
      `${name} holds a private key: give the service the public key only (openssl pkey -pubout)`,
    );
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch {
    throw new ConfigError(`${name} must be a PEM public key (-----BEGIN PUBLIC KEY-----)`);
  }
  const details = key.asymmetricKeyDetails;
  if (key.asymmetricKeyType === "ec" && details?.namedCurve === "prime256v1")
    return { key, algorithm: "ES256" };
  if (key.asymmetricKeyType === "rsa" && (details?.modulusLength ?? 0) >= 2048)
    return { key, algorithm: "RS256" };
  throw new ConfigError(`${name} must be an ES256 (P-256) or RS256 (RSA, 2048 bits or more) key`);
}

/** The bearer-token settings alone, read from `env` (a service reads them in its own schema). */
export function readAuthConfig(env: Env, options: { required: true }): AuthConfig;
export function readAuthConfig(env: Env, options: { required: boolean }): AuthConfig | undefined;
export function readAuthConfig(env: Env, options: { required: boolean }) {
  return authConfig(parseEnv(authEnv, env), options);
}

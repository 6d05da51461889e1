import type { AuthConfig } from "./auth/token-verifier";
import { type LogLevel, logLevels } from "./logger";

export type Env = Record<string, string | undefined>;

/** A bad or missing setting; main prints its message as the one line and exits. */
export class ConfigError extends Error {}

const present = (env: Env, name: string) => {
  const value = env[name]?.trim();
  return value === undefined || value === "" ? undefined : value;
};

export const read = {
  string(env: Env, name: string, fallback?: string): string {
    const value = present(env, name) ?? fallback;
    if (value === undefined) throw new ConfigError(`${name} is required but not set`);
    return value;
  },

  optional(env: Env, name: string): string | undefined {
    return present(env, name);
  },

  int(
    env: Env,
    name: string,
    fallback: number,
    { min = 0, max = Number.MAX_SAFE_INTEGER } = {},
  ): number {
    const raw = present(env, name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max)
      throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
    return Number(raw);
  },

  bool(env: Env, name: string, fallback = false): boolean {
    const raw = present(env, name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (["1", "true", "yes", "on"].includes(raw)) return true;
    if (["0", "false", "no", "off"].includes(raw)) return false;
    throw new ConfigError(`${name} must be true or false, got "${raw}"`);
  },

  /**
   * N2: how many proxies in front of the service append to X-Forwarded-For. `false` and `true`
   * are read as 0 and 1, the meaning they had when the setting was a switch.
   */
  trustedHops(env: Env, name: string): number {
    const raw = present(env, name)?.toLowerCase();
    if (raw === "false") return 0;
    if (raw === "true") return 1;
    if (raw === undefined || /^\d{1,2}$/.test(raw)) return Number(raw ?? 0);
    throw new ConfigError(
      `${name} must be the number of trusted proxies (0 to 99, or false / true), got "${raw}"`,
    );
  },

  url(env: Env, name: string, protocols: string[], fallback?: string): string {
    const value = read.string(env, name, fallback);
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new ConfigError(`${name} must be a URL (${protocols.join(" or ")})`);
    }
    if (!protocols.includes(url.protocol))
      throw new ConfigError(`${name} must be a URL starting with ${protocols.join(" or ")}`);
    return value;
  },

  logLevel(env: Env): LogLevel {
    const raw = present(env, "LOG_LEVEL")?.toLowerCase() ?? "info";
    if (!logLevels.includes(raw as LogLevel))
      throw new ConfigError(`LOG_LEVEL must be one of ${logLevels.join(", ")}, got "${raw}"`);
    return raw as LogLevel;
  },
};

/** Optional prefix for stream, subject and consumer names, so several stacks can share one NATS. */
function natsPrefix(env: Env): string {
  const prefix = read.optional(env, "NATS_PREFIX") ?? "";
  if (!/^[a-zA-Z0-9]{0,32}$/.test(prefix))
    throw new ConfigError(`NATS_PREFIX must be up to 32 letters or digits, got "${prefix}"`);
  return prefix;
}

export type NatsCredentials = { user: string; pass: string } | { token: string };

/** One NATS_URL entry: the URL without its user information, and the credentials it carried. */
function splitUserInfo(entry: string): { url: string; credentials?: NatsCredentials } {
  const at = entry.lastIndexOf("@");
  if (at < 0) return { url: entry };
  const scheme = entry.match(/^[a-z][a-z0-9+.-]*:\/\//i)?.[0] ?? "";
  const userInfo = entry.slice(scheme.length, at);
  const colon = userInfo.indexOf(":");
  let decoded: string[];
  try {
    decoded = (colon < 0 ? [userInfo] : [userInfo.slice(0, colon), userInfo.slice(colon + 1)]).map(
      decodeURIComponent,
    );
  } catch {
    throw new ConfigError("NATS_URL has malformed credentials (percent-encode them)");
  }
  const [name = "", secret] = decoded;
  if (name === "" || secret === "") throw new ConfigError("NATS_URL has empty credentials");
  return {
    url: scheme + entry.slice(at + 1),
    credentials: secret === undefined ? { token: name } : { user: name, pass: secret },
  };
}

/**
 * A2: the bearer-token settings, the same for both services. `AUTH_JWKS_URL` (RS256/ES256 keys)
 * or `AUTH_JWT_SECRET` (HS256, at least 32 characters). Undefined when neither is set and the
 * service may run without (payments: its operator routes then answer 503); else it is required.
 */
export function readAuthConfig(env: Env, options: { required: true }): AuthConfig;
export function readAuthConfig(env: Env, options: { required: boolean }): AuthConfig | undefined;
export function readAuthConfig(
  env: Env,
  { required }: { required: boolean },
): AuthConfig | undefined {
  const jwtSecret = read.optional(env, "AUTH_JWT_SECRET");
  const jwksUrl = read.optional(env, "AUTH_JWKS_URL");
  if (!jwksUrl && !jwtSecret) {
    if (required) throw new ConfigError("AUTH_JWT_SECRET is required but not set");
    return undefined;
  }
  if (jwtSecret && jwtSecret.length < 32)
    throw new ConfigError("AUTH_JWT_SECRET must be at least 32 characters long");
  return {
    jwtSecret,
    jwksUrl: jwksUrl ? read.url(env, "AUTH_JWKS_URL", ["https:", "http:"]) : undefined,
    issuer: read.optional(env, "AUTH_ISSUER"),
    audience: read.optional(env, "AUTH_AUDIENCE"),
  };
}

/**
 * NATS_URL and the credentials to connect with (N1): NATS_USER and NATS_PASSWORD, or the user
 * information of NATS_URL (`nats://user:pass@host:4222`, or `nats://token@host:4222`). The `nats`
 * client ignores a URL's user information, so it is taken out here and passed as options; the URL
 * left behind carries no secret. NATS_URL may list the servers of a cluster, comma-separated (X1);
 * the client connects to any of them and moves to another when it goes away.
 */
export function natsConnection(env: Env): { natsUrl: string; natsCredentials?: NatsCredentials } {
  const raw = read.string(env, "NATS_URL", "nats://127.0.0.1:4222");
  const user = read.optional(env, "NATS_USER");
  const pass = read.optional(env, "NATS_PASSWORD");
  if ((user === undefined) !== (pass === undefined))
    throw new ConfigError("NATS_USER and NATS_PASSWORD must be set together");
  const entries = raw.split(",").map((entry) => entry.trim());
  if (entries.some((entry) => entry === ""))
    throw new ConfigError("NATS_URL must be one URL or a comma-separated list of URLs");
  const parsed = entries.map(splitUserInfo);
  const natsUrl = parsed.map((entry) => entry.url).join(",");
  const inUrl = parsed.flatMap((entry) => (entry.credentials ? [entry.credentials] : []));
  if (inUrl.length === 0)
    return { natsUrl, natsCredentials: user && pass ? { user, pass } : undefined };
  if (user !== undefined)
    throw new ConfigError("NATS_URL must not carry credentials when NATS_USER is set");
  // The client has one set of credentials for every server it may connect to.
  if (inUrl.some((c) => JSON.stringify(c) !== JSON.stringify(inUrl[0])))
    throw new ConfigError("NATS_URL lists different credentials for its servers; use one set");
  return { natsUrl, natsCredentials: inUrl[0] };
}

/** The servers of a NATS_URL list (`natsConnection`'s `natsUrl`), for the client's `servers`. */
export const natsServers = (natsUrl: string): string[] =>
  natsUrl.split(",").map((entry) => entry.trim());

/** Settings both services share. */
export function readCommonConfig(
  env: Env,
  defaults: { port: number; ratePerSecond: number; burst: number },
) {
  return {
    port: read.int(env, "PORT", defaults.port, { min: 0, max: 65535 }),
    databaseUrl: read.url(env, "DATABASE_URL", ["postgres:", "postgresql:"]),
    ...natsConnection(env),
    natsPrefix: natsPrefix(env),
    // X1: 3 in a three-node cluster survives losing one node; a single server holds only 1.
    streamReplicas: read.int(env, "STREAM_REPLICAS", 1, { min: 1, max: 5 }),
    rateLimit: {
      ratePerSecond: read.int(env, "RATE_LIMIT_RPS", defaults.ratePerSecond),
      burst: read.int(env, "RATE_LIMIT_BURST", defaults.burst),
    },
    trustProxy: read.trustedHops(env, "TRUST_PROXY"),
    logLevel: read.logLevel(env),
    /** O8: where spans go over OTLP/HTTP; unset, none are recorded. */
    otlpEndpoint: read.optional(env, "OTEL_EXPORTER_OTLP_ENDPOINT")
      ? read.url(env, "OTEL_EXPORTER_OTLP_ENDPOINT", ["http:", "https:"])
      : undefined,
  };
}

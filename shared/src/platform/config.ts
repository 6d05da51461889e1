import { type Static, Type } from "@sinclair/typebox";
import { authVariables } from "./auth/auth-config";
import { databaseUrl } from "./database-url";
import { ConfigError, type Env, parseEnv, Var } from "./env";
import { logLevels } from "./logger";

/** NATS_URL and its credentials (N1, X1); `natsConnection` takes them apart. */
export const natsVariables = {
  NATS_URL: Var.text({
    default: "nats://127.0.0.1:4222",
    secret: true,
    description:
      "NATS server, or a comma-separated list of a cluster's servers; may carry credentials",
  }),
  NATS_USER: Var.optional(Var.text({ description: "NATS user; set with NATS_PASSWORD" })),
  NATS_PASSWORD: Var.optional(Var.text({ secret: true, description: "NATS password" })),
};
export const natsEnv = Type.Object(natsVariables);

/** The variables both services read; the defaults that differ between them are arguments. */
export const commonVariables = (defaults: {
  port: number;
  ratePerSecond: number;
  burst: number;
}) => ({
  PORT: Var.integer({ maximum: 65535, default: defaults.port, description: "port to listen on" }),
  HOST: Var.text({
    default: "0.0.0.0",
    pattern: "^[A-Za-z0-9.:-]{1,253}$",
    expected: "an address to listen on (e.g. 127.0.0.1)",
    description: "N12: address to listen on; npm start sets 127.0.0.1",
  }),
  METRICS_TOKEN: Var.optional(
    Var.text({
      pattern: "^[\\x21-\\x7e]{16,}$",
      secret: true,
      expected: "at least 16 printable characters without spaces",
      description: "N4: unset, /metrics is open; set, it needs this bearer token",
    }),
  ),
  // X2: one host or a libpq host list; `databaseUrl` checks it part by part (not `new URL()`).
  DATABASE_URL: Var.text({
    secret: true,
    description:
      "PostgreSQL to connect to: postgres://user:pass@host:5432/db, or several hosts " +
      "(host1:5432,host2:5432) with ?target_session_attrs=primary (read-write is taken as primary)",
  }),
  ...natsVariables,
  NATS_PREFIX: Var.text({
    default: "",
    pattern: "^[a-zA-Z0-9]{0,32}$",
    expected: "up to 32 letters or digits",
    description: "prefix of stream, subject and consumer names, so several stacks share one NATS",
  }),
  // X1: 3 in a three-node cluster survives losing one node; a single server holds only 1.
  STREAM_REPLICAS: Var.integer({
    minimum: 1,
    maximum: 5,
    default: 1,
    description: "JetStream replicas of the streams the service creates",
  }),
  RATE_LIMIT_RPS: Var.integer({
    default: defaults.ratePerSecond,
    description: "requests a second per client; 0 turns the limit off",
  }),
  RATE_LIMIT_BURST: Var.integer({ default: defaults.burst, description: "burst per client" }),
  // N2: `false` and `true` are read as 0 and 1, the meaning they had when this was a switch.
  TRUST_PROXY: Type.Union(
    [Type.Integer({ minimum: 0, maximum: 99 }), Type.Literal("false"), Type.Literal("true")],
    {
      default: 0,
      expected: "the number of trusted proxies (0 to 99, or false / true)",
      description: "how many proxies in front of the service append to X-Forwarded-For",
    },
  ),
  LOG_LEVEL: Var.oneOf(logLevels, { default: "info", description: "least severe level logged" }),
  OTEL_EXPORTER_OTLP_ENDPOINT: Var.optional(
    Var.url(["http:", "https:"], { description: "O8: where spans go over OTLP/HTTP; unset, none" }),
  ),
  ...authVariables,
});

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
 * NATS_URL and the credentials to connect with (N1): NATS_USER and NATS_PASSWORD, or the user
 * information of NATS_URL (`nats://user:pass@host:4222`, or `nats://token@host:4222`). The `nats`
 * client ignores a URL's user information, so it is taken out here and passed as options; the URL
 * left behind carries no secret. NATS_URL may list the servers of a cluster, comma-separated (X1);
 * the client connects to any of them and moves to another when it goes away.
 */
export function natsConnection({
  NATS_URL: raw,
  NATS_USER: user,
  NATS_PASSWORD: pass,
}: Static<typeof natsEnv>): { natsUrl: string; natsCredentials?: NatsCredentials } {
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

/** N2: TRUST_PROXY as the number of proxies whose X-Forwarded-For entries are trusted. */
const trustedHops = (value: number | "false" | "true"): number =>
  value === "true" ? 1 : value === "false" ? 0 : value;

export type CommonVariables = Static<ReturnType<typeof commonEnv>>;

export const commonEnv = (defaults: Parameters<typeof commonVariables>[0]) =>
  Type.Object(commonVariables(defaults));

/** The settings both services share, from their parsed variables. */
export function commonSettings(vars: CommonVariables) {
  return {
    port: vars.PORT,
    /** N12: the address to listen on; `npm start` sets 127.0.0.1. */
    host: vars.HOST,
    /** N4: unset, /metrics is open; set, it needs `Authorization: Bearer <METRICS_TOKEN>`. */
    metricsToken: vars.METRICS_TOKEN,
    databaseUrl: databaseUrl(vars.DATABASE_URL),
    ...natsConnection(vars),
    natsPrefix: vars.NATS_PREFIX,
    streamReplicas: vars.STREAM_REPLICAS,
    rateLimit: { ratePerSecond: vars.RATE_LIMIT_RPS, burst: vars.RATE_LIMIT_BURST },
    trustProxy: trustedHops(vars.TRUST_PROXY),
    logLevel: vars.LOG_LEVEL,
    otlpEndpoint: vars.OTEL_EXPORTER_OTLP_ENDPOINT,
  };
}

export type CommonConfig = ReturnType<typeof commonSettings>;

/** The shared settings alone, read from `env` (a service reads them as part of its own schema). */
export const readCommonConfig = (env: Env, defaults: Parameters<typeof commonVariables>[0]) =>
  commonSettings(parseEnv(commonEnv(defaults), env));

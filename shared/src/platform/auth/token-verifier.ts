import type { KeyObject } from "node:crypto";
import {
  createRemoteJWKSet,
  type JWKSCacheInput,
  type JWTPayload,
  type JWTVerifyOptions,
  jwksCache,
  jwtVerify,
} from "jose";
import { UnauthorizedError } from "../errors";
import { isCleanText } from "../http/fields";

/**
 * Where tokens come from (A2, N6): `AUTH_PUBLIC_KEY` (a PEM ES256/RS256 public key) or
 * `AUTH_JWKS_URL`, else `AUTH_JWT_SECRET` (HS256, local use); `AUTH_ISSUER`, `AUTH_AUDIENCE`.
 */
export type AuthConfig = {
  jwtSecret?: string;
  jwksUrl?: string;
  /** N6: verification without any key that can sign; its algorithm follows from the key. */
  publicKey?: { key: KeyObject; algorithm: "ES256" | "RS256" };
  issuer?: string;
  audience?: string;
  /** N17: AUTH_MAX_TOKEN_AGE, the longest `exp - iat` accepted (default 24 h; 0 = unbounded). */
  maxTokenAgeSeconds?: number;
};

/** Who is calling: `sub` is the customer id (A3); `admin` marks a back-office token. */
export type Principal = { customerId: string; admin: boolean };

export type TokenVerifier = ((token: string) => Promise<Principal>) & {
  /** The principal of a token verified before and still remembered (A5), without waiting. */
  remembered?: (token: string) => Principal | undefined;
};

const maxVerifiedTokens = 10_000;
/**
 * A5: how long a verified token is remembered at most, whatever its `exp` says; also how old the
 * fetched JWKS may grow before the next verification fetches it again (jose's default is 10).
 */
const maxRememberedMs = 5 * 60_000;
/** A5: a subject is at most this many code points (what PostgreSQL counts in a text column). */
const maxSubjectCodePoints = 255;

/** N17: how far in the future a token's `iat` may be (clock skew between issuer and service). */
const allowedSkewSeconds = 60;

/**
 * N17: the token's life is bounded: `iat` at most 60 s ahead, and `exp - iat` at most `maxAge`
 * seconds. A token without `iat` is judged from now: its `exp` at most `maxAge` ahead.
 */
export function lifeRefusal(payload: JWTPayload, maxAge: number, now = Date.now() / 1000) {
  const { iat, exp } = payload;
  if (typeof iat === "number" && iat > now + allowedSkewSeconds)
    return "The bearer token was issued in the future";
  if (maxAge === 0 || typeof exp !== "number") return undefined;
  const from = typeof iat === "number" ? iat : now;
  return exp - from > maxAge
    ? "The bearer token lives longer than this service accepts"
    : undefined;
}

/** A token that is not accepted (A2, A5); the bearer plugin answers it with its challenge. */
export class InvalidTokenError extends UnauthorizedError {}

/**
 * A5: well-formed Unicode (a lone surrogate would be stored as U+FFFD, so two subjects would share
 * one customer), 1 to 255 code points, and clean one-line text as every id the services take
 * (N9, N18): no C0, DEL or C1 control character, no bidirectional control (a `sub` with U+202E
 * shows the operator another customer's name) and no invisible mark.
 */
export function isUsableSubject(sub: unknown): sub is string {
  if (typeof sub !== "string" || sub.length > maxSubjectCodePoints * 2 || !isCleanText(sub))
    return false;
  const codePoints = [...sub].length;
  return codePoints >= 1 && codePoints <= maxSubjectCodePoints;
}

/**
 * Verifies bearer tokens as A2 says: HS256 with the secret, or RS256/ES256 from a JWKS. Both
 * services use it: the api for every route, payments for its operator routes (V3).
 */
export function createTokenVerifier(config: AuthConfig): TokenVerifier {
  const options: JWTVerifyOptions = {
    requiredClaims: ["exp", "sub"],
    issuer: config.issuer,
    audience: config.audience,
  };
  // jose writes `uat` here each time it fetches the key set: the generation of the keys in use.
  const keySet: JWKSCacheInput = {};
  const keysGeneration = () => ("uat" in keySet ? keySet.uat : 0);
  const jwks = config.jwksUrl
    ? createRemoteJWKSet(new URL(config.jwksUrl), {
        cacheMaxAge: maxRememberedMs,
        [jwksCache]: keySet,
      })
    : undefined;
  const secret = config.jwtSecret ? new TextEncoder().encode(config.jwtSecret) : undefined;

  const publicKey = config.publicKey;
  const verify = async (token: string): Promise<JWTPayload> => {
    if (publicKey)
      return (
        await jwtVerify(token, publicKey.key, { ...options, algorithms: [publicKey.algorithm] })
      ).payload;
    if (jwks)
      return (await jwtVerify(token, jwks, { ...options, algorithms: ["RS256", "ES256"] })).payload;
    if (secret)
      return (await jwtVerify(token, secret, { ...options, algorithms: ["HS256"] })).payload;
    throw new Error("no token key configured");
  };

  // Checking a token again is pure cost (WebCrypto key import and HMAC on every request), so a
  // verified one is remembered (A5): at most 5 minutes, never past its `exp`, and only under the
  // key set it was verified with. Bounded so a stream of distinct tokens cannot grow it.
  const verified = new Map<string, { principal: Principal; until: number; generation: number }>();
  let seenGeneration = keysGeneration();

  const remembered = (token: string): Principal | undefined => {
    const known = verified.get(token);
    return known && known.until > Date.now() && known.generation === seenGeneration
      ? known.principal
      : undefined;
  };

  const verifier: TokenVerifier = async (token) => {
    const known = verified.get(token);
    if (known && known.until > Date.now() && known.generation === seenGeneration)
      return known.principal;
    if (known) verified.delete(token);

    const generation = keysGeneration();
    let payload: JWTPayload;
    try {
      payload = await verify(token);
    } catch {
      throw new InvalidTokenError("The bearer token is invalid or expired");
    } finally {
      // A refetched key set may have dropped the key a remembered token was signed with.
      if (keysGeneration() !== seenGeneration) {
        verified.clear();
        seenGeneration = keysGeneration();
      }
    }
    const tooLong = lifeRefusal(payload, config.maxTokenAgeSeconds ?? 86_400);
    if (tooLong) throw new InvalidTokenError(tooLong);
    if (!isUsableSubject(payload.sub))
      throw new InvalidTokenError("The bearer token has no usable subject");
    const scope = typeof payload.scope === "string" ? payload.scope.split(" ") : [];
    const principal = { customerId: payload.sub, admin: scope.includes("admin") };
    if (verified.size >= maxVerifiedTokens) verified.delete(verified.keys().next().value as string);
    verified.set(token, {
      principal,
      until: Math.min((payload.exp as number) * 1000, Date.now() + maxRememberedMs),
      generation,
    });
    return principal;
  };
  verifier.remembered = remembered;
  return verifier;
}

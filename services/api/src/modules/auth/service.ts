import { UnauthorizedError } from "@commerce/shared/errors";
import { createRemoteJWKSet, type JWTPayload, type JWTVerifyOptions, jwtVerify } from "jose";

export type AuthConfig = {
  jwtSecret?: string;
  jwksUrl?: string;
  issuer?: string;
  audience?: string;
};

/** Who is calling: `sub` is the customer id (A3); `admin` marks a back-office token. */
export type Principal = { customerId: string; admin: boolean };

export type TokenVerifier = (token: string) => Promise<Principal>;

const maxVerifiedTokens = 10_000;

export const bearerChallenge = (error?: string) =>
  error ? `Bearer realm="api", error="${error}"` : 'Bearer realm="api"';

/** Verifies bearer tokens as A2 says: HS256 with the secret, or RS256/ES256 from a JWKS. */
export function createTokenVerifier(config: AuthConfig): TokenVerifier {
  const options: JWTVerifyOptions = {
    requiredClaims: ["exp", "sub"],
    issuer: config.issuer,
    audience: config.audience,
  };
  const jwks = config.jwksUrl ? createRemoteJWKSet(new URL(config.jwksUrl)) : undefined;
  const secret = config.jwtSecret ? new TextEncoder().encode(config.jwtSecret) : undefined;

  const verify = async (token: string): Promise<JWTPayload> => {
    if (jwks)
      return (await jwtVerify(token, jwks, { ...options, algorithms: ["RS256", "ES256"] })).payload;
    if (secret)
      return (await jwtVerify(token, secret, { ...options, algorithms: ["HS256"] })).payload;
    throw new Error("no token key configured");
  };

  // A token verified once stays good until its `exp`: checking it again is pure cost (WebCrypto
  // key import and HMAC on every request). Bounded so a stream of distinct tokens cannot grow it.
  const verified = new Map<string, { principal: Principal; expiresAt: number }>();

  return async (token) => {
    const known = verified.get(token);
    if (known && known.expiresAt > Date.now()) return known.principal;
    if (known) verified.delete(token);

    let payload: JWTPayload;
    try {
      payload = await verify(token);
    } catch {
      throw new UnauthorizedError("The bearer token is invalid or expired", {
        "www-authenticate": bearerChallenge("invalid_token"),
      });
    }
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what a subject may not hold
    if (typeof payload.sub !== "string" || !/^[^\u0000-\u001f]{1,255}$/.test(payload.sub))
      throw new UnauthorizedError("The bearer token has no usable subject", {
        "www-authenticate": bearerChallenge("invalid_token"),
      });
    const scope = typeof payload.scope === "string" ? payload.scope.split(" ") : [];
    const principal = { customerId: payload.sub, admin: scope.includes("admin") };
    if (verified.size >= maxVerifiedTokens) verified.delete(verified.keys().next().value as string);
    verified.set(token, { principal, expiresAt: (payload.exp as number) * 1000 });
    return principal;
  };
}

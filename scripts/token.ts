/**
 * Prints a signed bearer token:
 *   npm run token -- --sub alice [--admin] [--ttl 1h]
 * N6: with AUTH_PRIVATE_KEY (a PEM ES256/RS256 private key, newlines may be written as `\n`) or
 * AUTH_PRIVATE_KEY_FILE (a file holding one), it signs with that key, the pair of the services'
 * AUTH_PUBLIC_KEY, and sets `iss` and `aud` from AUTH_ISSUER and AUTH_AUDIENCE (both required
 * then). Otherwise it signs HS256 with AUTH_JWT_SECRET (or the secret `npm start` keeps in .data/).
 * The private key belongs to whoever issues tokens, never to a service's environment.
 */
import { createPrivateKey, type KeyObject } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { SignJWT } from "jose";

const { values } = parseArgs({
  options: {
    sub: { type: "string", default: "alice" },
    admin: { type: "boolean", default: false },
    ttl: { type: "string", default: "1h" },
  },
});

const fail = (message: string): never => {
  console.error(message);
  process.exit(1);
};

if (!/^\d+[smhd]$/.test(values.ttl)) fail("--ttl must look like 30m, 1h or 7d");
// N17: the services refuse a token that lives longer than AUTH_MAX_TOKEN_AGE (default 24 h).
const ttlSeconds =
  Number(values.ttl.slice(0, -1)) * { s: 1, m: 60, h: 3600, d: 86_400 }[values.ttl.at(-1) as "s"];
const maxAge = Number(process.env.AUTH_MAX_TOKEN_AGE || 86_400);
if (maxAge > 0 && ttlSeconds > maxAge)
  fail(
    `--ttl ${values.ttl} is longer than AUTH_MAX_TOKEN_AGE (${maxAge} s): the services would refuse it`,
  );

/** The signing key: the private key when one is configured, else the HS256 secret. */
function signingKey(): { key: KeyObject | Uint8Array; alg: string } {
  const inline = process.env.AUTH_PRIVATE_KEY?.trim();
  const file = process.env.AUTH_PRIVATE_KEY_FILE?.trim();
  if (inline || file) {
    const pem = file ? readFileSync(file, "utf8") : (inline ?? "").replaceAll("\\n", "\n");
    let key: KeyObject;
    try {
      key = createPrivateKey(pem);
    } catch {
      return fail("AUTH_PRIVATE_KEY must be a PEM private key (ES256 P-256 or RS256)");
    }
    if (key.asymmetricKeyType === "ec") return { key, alg: "ES256" };
    if (key.asymmetricKeyType === "rsa") return { key, alg: "RS256" };
    return fail("AUTH_PRIVATE_KEY must be an ES256 (P-256) or RS256 key");
  }
  const localSecret = ".data/auth-jwt-secret";
  const secret =
    process.env.AUTH_JWT_SECRET ||
    (existsSync(localSecret) ? readFileSync(localSecret, "utf8").trim() : undefined);
  if (!secret)
    return fail(
      "AUTH_PRIVATE_KEY or AUTH_JWT_SECRET is not set (and no .data/auth-jwt-secret from npm start)",
    );
  return { key: new TextEncoder().encode(secret), alg: "HS256" };
}

const { key, alg } = signingKey();
const issuer = process.env.AUTH_ISSUER?.trim();
const audience = process.env.AUTH_AUDIENCE?.trim();
if (alg !== "HS256" && (!issuer || !audience))
  fail(
    "AUTH_ISSUER and AUTH_AUDIENCE are required with AUTH_PRIVATE_KEY (the services require them)",
  );

let jwt = new SignJWT({ scope: values.admin ? "admin" : "customer" })
  .setProtectedHeader({ alg, typ: "JWT" })
  .setSubject(values.sub)
  .setIssuedAt()
  .setExpirationTime(values.ttl);
if (issuer) jwt = jwt.setIssuer(issuer);
if (audience) jwt = jwt.setAudience(audience);
console.log(await jwt.sign(key));

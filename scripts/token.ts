/**
 * Prints a signed bearer token for local use:
 *   npm run token -- --sub alice [--admin] [--ttl 1h]
 * Signs with AUTH_JWT_SECRET (or the secret `npm start` keeps in .data/).
 */
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

const localSecret = ".data/auth-jwt-secret";
const secret =
  process.env.AUTH_JWT_SECRET ||
  (existsSync(localSecret) ? readFileSync(localSecret, "utf8").trim() : undefined);
if (!secret) {
  console.error("AUTH_JWT_SECRET is not set (and no .data/auth-jwt-secret from npm start)");
  process.exit(1);
}
if (!/^\d+[smhd]$/.test(values.ttl)) {
  console.error("--ttl must look like 30m, 1h or 7d");
  process.exit(1);
}

let jwt = new SignJWT({ scope: values.admin ? "admin" : "customer" })
  .setProtectedHeader({ alg: "HS256", typ: "JWT" })
  .setSubject(values.sub)
  .setIssuedAt()
  .setExpirationTime(values.ttl);
if (process.env.AUTH_ISSUER) jwt = jwt.setIssuer(process.env.AUTH_ISSUER);
if (process.env.AUTH_AUDIENCE) jwt = jwt.setAudience(process.env.AUTH_AUDIENCE);
const token = await jwt.sign(new TextEncoder().encode(secret));
console.log(token);

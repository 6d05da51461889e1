import type { PaymentMessage } from "@commerce/shared/contract/messages";
import { exportJWK, generateKeyPair, SignJWT } from "jose";

/** The real servers the tests run against. */
export const testDatabaseUrl = process.env.DATABASE_URL ?? "postgres://root@127.0.0.1:5432/test";
export const testNatsUrl = process.env.NATS_URL ?? "nats://127.0.0.1:4222";

/** The secrets every test stack is configured with. */
export const jwtSecret = "test-secret-that-is-at-least-32-characters";
export const webhookSecret = "whsec_test_secret_for_payments";

/** A short unique name, for customers, categories and stream prefixes of one test. */
export const unique = (label = "t") =>
  `${label}${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;

/**
 * Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs`: 15 s
 * by default, room for a busy machine; a probe that never holds fails all the same.
 */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs = 15_000,
  what = "condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

// One way to find a free port, and to see that one is taken, in the repo: `npm start`'s, which the
// tests and the bench use too.
export { answers, freePort } from "../../scripts/start/probes";

export type Claims = {
  sub?: string;
  scope?: string;
  exp?: number | string;
  nbf?: number;
  iss?: string;
  aud?: string;
};

/** An HS256 token; `exp` defaults to one hour from now. */
export async function token(claims: Claims = {}, secret = jwtSecret): Promise<string> {
  const { sub, exp, nbf, iss, aud, ...rest } = claims;
  let jwt = new SignJWT(rest).setProtectedHeader({ alg: "HS256" }).setIssuedAt();
  if (sub !== undefined) jwt = jwt.setSubject(sub);
  jwt = jwt.setExpirationTime(exp ?? "1h");
  if (nbf !== undefined) jwt = jwt.setNotBefore(nbf);
  if (iss) jwt = jwt.setIssuer(iss);
  if (aud) jwt = jwt.setAudience(aud);
  return jwt.sign(new TextEncoder().encode(secret));
}

/** An RS256 key pair and a JWKS endpoint on loopback serving its public key as kid "k1"; stop() closes it. */
export async function servedJwks() {
  const { publicKey, privateKey } = await generateKeyPair("RS256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => Response.json({ keys: [jwk] }),
  });
  return {
    publicKey,
    privateKey,
    jwk,
    url: `http://127.0.0.1:${server.port}/jwks.json`,
    stop: () => server.stop(true),
  };
}

/** A customer's token, or an admin's with `scope` "admin". */
export const signToken = (sub: string, scope?: string) => token({ sub, scope });

/** A payment message (M1) for `order`, in full unless `extra` says otherwise, with an id of its own. */
export const paymentMessageFor = (
  order: { order_id: number; amount: number; currency: string },
  extra: Partial<PaymentMessage> = {},
): PaymentMessage => ({
  notification_id: unique("evt"),
  order_id: order.order_id,
  amount: order.amount,
  currency: order.currency,
  received_at: new Date().toISOString(),
  ...extra,
});

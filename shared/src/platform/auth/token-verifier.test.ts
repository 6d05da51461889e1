import { afterEach, describe, expect, setSystemTime, test } from "bun:test";
import { servedJwks, jwtSecret as testSecret, token } from "@commerce/testing/basics";
import { createTokenVerifier } from "./token-verifier";

describe("token verifier", () => {
  test("N17: iat more than 60 s ahead, or exp - iat beyond AUTH_MAX_TOKEN_AGE, is 401; 0 is unbounded", async () => {
    const { SignJWT } = await import("jose");
    const key = new TextEncoder().encode(testSecret);
    const now = Math.floor(Date.now() / 1000);
    const signed = (claims: { iat?: number; exp: number }) => {
      let jwt = new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("dora");
      if (claims.iat !== undefined) jwt = jwt.setIssuedAt(claims.iat);
      return jwt.setExpirationTime(claims.exp).sign(key);
    };
    const bounded = createTokenVerifier({ jwtSecret: testSecret });
    const unbounded = createTokenVerifier({ jwtSecret: testSecret, maxTokenAgeSeconds: 0 });
    const refused = { status: 401 };
    const century = now + 100 * 365 * 86_400;
    // The review's tokens: exp 100 years ahead, iat in the future.
    await expect(bounded(await signed({ iat: now, exp: century }))).rejects.toMatchObject(refused);
    await expect(bounded(await signed({ exp: century }))).rejects.toMatchObject(refused);
    await expect(bounded(await signed({ iat: now + 3600, exp: now + 7200 }))).rejects.toMatchObject(
      refused,
    );
    await expect(
      unbounded(await signed({ iat: now + 3600, exp: now + 7200 })),
    ).rejects.toMatchObject(refused);
    await expect(bounded(await signed({ iat: now, exp: now + 86_401 }))).rejects.toMatchObject(
      refused,
    );
    // Within bounds: 24 h exactly, 30 s of clock skew, no iat and a short life; unbounded at 0.
    await expect(bounded(await signed({ iat: now, exp: now + 86_400 }))).resolves.toBeDefined();
    await expect(bounded(await signed({ iat: now + 30, exp: now + 3600 }))).resolves.toBeDefined();
    await expect(bounded(await signed({ exp: now + 3600 }))).resolves.toBeDefined();
    await expect(unbounded(await signed({ iat: now, exp: century }))).resolves.toBeDefined();
    const hour = createTokenVerifier({ jwtSecret: testSecret, maxTokenAgeSeconds: 3600 });
    await expect(hour(await signed({ iat: now, exp: now + 3601 }))).rejects.toMatchObject(refused);
  });

  test("A2: issuer and audience are enforced when configured", async () => {
    const verify = createTokenVerifier({
      jwtSecret: testSecret,
      issuer: "https://id.example",
      audience: "shop",
    });
    await expect(
      verify(await token({ sub: "a", iss: "https://id.example", aud: "shop" })),
    ).resolves.toEqual({
      customerId: "a",
      admin: false,
    });
    await expect(
      verify(await token({ sub: "a", iss: "https://evil.example", aud: "shop" })),
    ).rejects.toMatchObject({
      status: 401,
    });
    await expect(
      verify(await token({ sub: "a", iss: "https://id.example" })),
    ).rejects.toMatchObject({ status: 401 });
  });

  test("A3: sub is the customer and scope admin marks a back-office token", async () => {
    const verify = createTokenVerifier({ jwtSecret: testSecret });
    expect(await verify(await token({ sub: "bob", scope: "read admin" }))).toEqual({
      customerId: "bob",
      admin: true,
    });
    expect(await verify(await token({ sub: "bob", scope: "administrator" }))).toEqual({
      customerId: "bob",
      admin: false,
    });
  });

  test("A5, N18: a sub with a bidirectional control or an invisible mark is 401; letters of any script, emoji and joiners are a subject", async () => {
    const verify = createTokenVerifier({ jwtSecret: testSecret });
    for (const sub of ["alice\u202eecila", "bob\u200b", "\u200fcarol", "dan\u00ad", "eve\u2066"])
      await expect(verify(await token({ sub }))).rejects.toMatchObject({ status: 401 });
    for (const sub of ["Кира", "李雷", "👩‍👩‍👧", "می\u200cخواهم"])
      expect((await verify(await token({ sub }))).customerId).toBe(sub);
  });

  test("A2: with AUTH_JWKS_URL, RS256 tokens are verified against the JWKS", async () => {
    const { SignJWT } = await import("jose");
    const { privateKey, url, stop } = await servedJwks();
    try {
      const verify = createTokenVerifier({ jwksUrl: url });
      const signed = await new SignJWT({ scope: "admin" })
        .setProtectedHeader({ alg: "RS256", kid: "k1" })
        .setSubject("carol")
        .setExpirationTime("5m")
        .sign(privateKey);
      expect(await verify(signed)).toEqual({ customerId: "carol", admin: true });
      await expect(verify(await token({ sub: "carol" }))).rejects.toMatchObject({ status: 401 });
    } finally {
      stop();
    }
  });
});

/** A JWKS endpoint whose keys the test rotates, and a signer for each of its key ids. */
async function rotatingJwks() {
  const { generateKeyPair, exportJWK, SignJWT } = await import("jose");
  const pairs = new Map<string, CryptoKeyPair>();
  const pair = (kid: string) => pairs.get(kid) as CryptoKeyPair;
  let served: string[] = [];
  let fetches = 0;
  const publish = async (...kids: string[]) => {
    for (const kid of kids)
      if (!pairs.has(kid)) pairs.set(kid, await generateKeyPair("RS256", { extractable: true }));
    served = kids;
  };
  const jwks = async () => ({
    keys: await Promise.all(
      served.map(async (kid) => ({
        ...(await exportJWK(pair(kid).publicKey)),
        kid,
        alg: "RS256",
        use: "sig",
      })),
    ),
  });
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async () => {
      fetches++;
      return Response.json(await jwks());
    },
  });
  const sign = (kid: string, sub: string, expiresIn: string) =>
    new SignJWT({})
      .setProtectedHeader({ alg: "RS256", kid })
      .setSubject(sub)
      .setExpirationTime(expiresIn)
      .sign(pair(kid).privateKey);
  return {
    url: `http://127.0.0.1:${server.port}/jwks.json`,
    publish,
    sign,
    fetches: () => fetches,
    stop: () => server.stop(true),
  };
}

describe("auth: remembered tokens", () => {
  afterEach(() => setSystemTime());

  test("A5: a token issued for 100 years is remembered for at most 5 minutes, then its removed key refuses it", async () => {
    const jwks = await rotatingJwks();
    try {
      await jwks.publish("k1");
      const verify = createTokenVerifier({ jwksUrl: jwks.url, maxTokenAgeSeconds: 0 });
      const century = await jwks.sign("k1", "erin", "100y");
      expect(await verify(century)).toEqual({ customerId: "erin", admin: false });
      await jwks.publish("k2");
      setSystemTime(Date.now() + 5 * 60_000 + 1000);
      await expect(verify(century)).rejects.toMatchObject({ status: 401 });
    } finally {
      jwks.stop();
    }
  });

  test("A5: a JWKS refresh forgets every remembered token, so a token of a removed key is 401 at once", async () => {
    const jwks = await rotatingJwks();
    try {
      await jwks.publish("k1");
      const verify = createTokenVerifier({ jwksUrl: jwks.url });
      const old = await jwks.sign("k1", "frank", "1h");
      expect(await verify(old)).toEqual({ customerId: "frank", admin: false });
      expect(jwks.fetches()).toBe(1);

      await jwks.publish("k2");
      const fresh = await jwks.sign("k2", "grace", "1h");
      // Past jose's 30 s cooldown, an unknown key id makes it fetch the key set again.
      setSystemTime(Date.now() + 31_000);
      expect(await verify(fresh)).toEqual({ customerId: "grace", admin: false });
      expect(jwks.fetches()).toBe(2);
      await expect(verify(old)).rejects.toMatchObject({ status: 401 });
    } finally {
      jwks.stop();
    }
  });
});

describe("auth: verified tokens", () => {
  test("A2: a token verified once is refused after its exp", async () => {
    const verify = createTokenVerifier({ jwtSecret: testSecret });
    const shortLived = await token({ sub: "dave", exp: Math.floor(Date.now() / 1000) + 2 });
    expect(await verify(shortLived)).toEqual({ customerId: "dave", admin: false });
    expect(await verify(shortLived)).toEqual({ customerId: "dave", admin: false });
    await Bun.sleep(2100);
    await expect(verify(shortLived)).rejects.toMatchObject({ status: 401 });
  });
});

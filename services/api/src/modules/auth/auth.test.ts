import { afterAll, afterEach, beforeAll, describe, expect, setSystemTime, test } from "bun:test";
import { jwtSecret as testSecret, token, unique } from "@commerce/testing/basics";
import { type ApiHarness, problemType, startApi } from "@commerce/testing/in-process";
import { createTokenVerifier } from "./service";

let api: ApiHarness;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
const now = () => Math.floor(Date.now() / 1000);

async function expect401(authorization: string | undefined) {
  const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
  const res = await api.call("GET", "/api/cart", { headers });
  expect(res.status).toBe(401);
  expect(res.headers.get("content-type")).toBe(problemType);
  expect(res.headers.get("www-authenticate")).toStartWith("Bearer");
  expect(res.json).toMatchObject({ status: 401, title: "Unauthorized" });
}

describe("auth", () => {
  test("A1: every /api route needs a bearer token", async () => {
    for (const [method, path] of [
      ["GET", "/api/products"],
      ["GET", "/api/products/1"],
      ["POST", "/api/orders"],
      ["GET", "/api/orders/1"],
      ["PATCH", "/api/orders/1"],
      ["GET", "/api/cart"],
      ["PUT", "/api/cart/items/1"],
      ["DELETE", "/api/cart/items/1"],
      ["GET", "/api/nowhere"],
    ]) {
      const res = await api.call(method, path, {
        body: method === "GET" || method === "DELETE" ? undefined : {},
      });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="api"');
    }
  });

  test("A1: a malformed Authorization header is 401", async () => {
    await expect401("Basic dXNlcjpwYXNz");
    await expect401("Bearer");
    await expect401("Bearer not a token");
    await expect401("bearer");
  });

  test("A2: a valid HS256 token is accepted, whatever the case of the scheme name", async () => {
    const res = await api.call("GET", "/api/cart", { token: await token({ sub: "alice" }) });
    expect(res.status).toBe(200);
    const lower = await api.call("GET", "/api/cart", {
      headers: { authorization: `bearer ${await token({ sub: "alice" })}` },
    });
    expect(lower.status).toBe(200);
  });

  test("A2: alg none, wrong key, wrong algorithm, expired, missing exp, future nbf are 401", async () => {
    const sub = "mallory";
    await expect401(
      `Bearer ${b64({ alg: "none", typ: "JWT" })}.${b64({ sub, exp: now() + 600 })}.`,
    );
    await expect401(`Bearer ${await token({ sub }, "another-secret-of-at-least-32-characters!!")}`);
    const hs512 = await new (await import("jose")).SignJWT({ sub })
      .setProtectedHeader({ alg: "HS512" })
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode(testSecret));
    await expect401(`Bearer ${hs512}`);
    await expect401(`Bearer ${await token({ sub, exp: now() - 120 })}`);
    const noExp = await new (await import("jose")).SignJWT({ sub })
      .setProtectedHeader({ alg: "HS256" })
      .sign(new TextEncoder().encode(testSecret));
    await expect401(`Bearer ${noExp}`);
    await expect401(`Bearer ${await token({ sub, nbf: now() + 3600 })}`);
    await expect401(`Bearer ${await token({})}`);
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

  test("O6: the token never appears in the request log", async () => {
    const secretToken = await token({ sub: "logcheck" });
    await api.call("GET", "/api/cart", { token: secretToken });
    const lines = api.logLines.join("");
    expect(lines).toContain('"route":"/api/cart"');
    expect(lines).not.toContain(secretToken);
  });

  test("A2: with AUTH_JWKS_URL, RS256 tokens are verified against the JWKS", async () => {
    const { generateKeyPair, exportJWK, SignJWT } = await import("jose");
    const { publicKey, privateKey } = await generateKeyPair("RS256");
    const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () => Response.json({ keys: [jwk] }),
    });
    try {
      const verify = createTokenVerifier({ jwksUrl: `http://127.0.0.1:${server.port}/jwks.json` });
      const signed = await new SignJWT({ scope: "admin" })
        .setProtectedHeader({ alg: "RS256", kid: "k1" })
        .setSubject("carol")
        .setExpirationTime("5m")
        .sign(privateKey);
      expect(await verify(signed)).toEqual({ customerId: "carol", admin: true });
      await expect(verify(await token({ sub: "carol" }))).rejects.toMatchObject({ status: 401 });
    } finally {
      server.stop(true);
    }
  });
});

describe("auth: subjects", () => {
  test("A3: a subject with control characters or over 255 characters is 401", async () => {
    await expect401(`Bearer ${await token({ sub: "alice\u0000" })}`);
    await expect401(`Bearer ${await token({ sub: "a".repeat(256) })}`);
  });

  test("A5: subjects with lone surrogates are 401, so user\\ud800 and user\\udbff cannot share one customer", async () => {
    const first = await token({ sub: "user\ud800" });
    const second = await token({ sub: "user\udbff" });
    await expect401(`Bearer ${first}`);
    await expect401(`Bearer ${second}`);
    expect(
      (await api.call("POST", "/api/orders", { token: first, body: { product_id: 1, qty: 1 } }))
        .status,
    ).toBe(401);
    expect((await api.call("GET", "/api/orders", { token: second })).status).toBe(401);
  });

  test("A5: DEL and C1 control characters are 401; length counts code points, 1 to 255", async () => {
    for (const sub of ["alice\u007f", "alice\u0085", "\u009fbob", ""])
      await expect401(`Bearer ${await token({ sub })}`);
    const ok = async (sub: string) =>
      (await api.call("GET", "/api/cart", { token: await token({ sub }) })).status;
    expect(await ok(`${unique("u")}${"😀".repeat(240)}`)).toBe(200);
    expect(await ok("😀".repeat(255))).toBe(200);
    await expect401(`Bearer ${await token({ sub: "😀".repeat(256) })}`);
    expect(await ok(`${unique("ü")}ñ€`)).toBe(200);
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
      const verify = createTokenVerifier({ jwksUrl: jwks.url });
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

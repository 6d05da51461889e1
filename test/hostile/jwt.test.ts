import { describe, expect, test } from "bun:test";
import { createTokenVerifier } from "@commerce/shared/platform/auth/token-verifier";
import { servedJwks, jwtSecret as testSecret, token } from "@commerce/testing/basics";
import { apiForFile } from "@commerce/testing/in-process";
import fc from "fast-check";
import { exportJWK, exportSPKI, generateKeyPair, SignJWT } from "jose";
import { expectWellFormed, numRuns } from "./support";

const { api } = await apiForFile();

const b64 = (value: object | string) =>
  Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");
const now = () => Math.floor(Date.now() / 1000);
const key = new TextEncoder().encode(testSecret);
const hmac = (algorithm: string, secret: Uint8Array | string, input: string) =>
  new Bun.CryptoHasher(algorithm as "sha256", secret).update(input).digest("base64url");

/** A token with any header and claims, HMAC-signed with `secret` (the right one by default). */
function forge(
  header: object,
  claims: object,
  secret: Uint8Array | string = key,
  algorithm = "sha256",
) {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${hmac(algorithm, secret, input)}`;
}

/** The caller's own cart: 200 for a good token, 401 problem+json with a Bearer challenge else. */
async function status(authorization: string) {
  const response = await api.app.handle(
    new Request("http://localhost/api/cart", { headers: { authorization } }),
  );
  await expectWellFormed(response);
  if (response.status === 401)
    expect(response.headers.get("www-authenticate")).toStartWith("Bearer");
  return response.status;
}

const good = { sub: "jwt-hostile", exp: now() + 600 };

describe("api: JWT attacks (A2)", () => {
  test("A2: a token forged the textbook way is 200 only when signed HS256 with the secret", async () => {
    expect(await status(`Bearer ${forge({ alg: "HS256", typ: "JWT" }, good)}`)).toBe(200);
  });

  test("A2: alg none in any spelling, with or without a signature, is 401", async () => {
    for (const alg of ["none", "None", "NONE", "nOnE", "", null])
      for (const signature of ["", hmac("sha256", key, `${b64({ alg })}.${b64(good)}`), "AAAA"])
        expect(await status(`Bearer ${b64({ alg, typ: "JWT" })}.${b64(good)}.${signature}`)).toBe(
          401,
        );
  });

  test("A2: another algorithm signed with the right secret is 401: HS384, HS512, and RS256 or ES256 headers over an HMAC", async () => {
    expect(await status(`Bearer ${forge({ alg: "HS384" }, good, key, "sha384")}`)).toBe(401);
    expect(await status(`Bearer ${forge({ alg: "HS512" }, good, key, "sha512")}`)).toBe(401);
    expect(await status(`Bearer ${forge({ alg: "RS256" }, good)}`)).toBe(401);
    expect(await status(`Bearer ${forge({ alg: "ES256" }, good)}`)).toBe(401);
    expect(await status(`Bearer ${forge({ alg: "hs256" }, good)}`)).toBe(401);
  });

  test("A2: a wrong key, including an empty one and the secret's look-alikes, is 401", async () => {
    for (const wrong of [
      "",
      " ",
      `${testSecret} `,
      testSecret.toUpperCase(),
      testSecret.slice(0, -1),
      "secret",
    ])
      expect(
        await status(`Bearer ${forge({ alg: "HS256" }, good, new TextEncoder().encode(wrong))}`),
      ).toBe(401);
  });

  test("A2: exp past, missing, null, textual or not a number is 401; nbf ahead or textual is 401", async () => {
    const cases: object[] = [
      { sub: "x", exp: now() - 1 },
      { sub: "x", exp: now() - 3600 },
      { sub: "x" },
      { sub: "x", exp: null },
      { sub: "x", exp: String(now() + 600) },
      { sub: "x", exp: [now() + 600] },
      { sub: "x", exp: true },
      { sub: "x", exp: now() + 600, nbf: now() + 60 },
      { sub: "x", exp: now() + 600, nbf: String(now() - 60) },
    ];
    for (const claims of cases)
      expect({ claims, status: await status(`Bearer ${forge({ alg: "HS256" }, claims)}`) }).toEqual(
        {
          claims,
          status: 401,
        },
      );
    expect(
      await status(
        `Bearer ${forge({ alg: "HS256" }, { sub: "x", exp: now() + 600, nbf: now() - 60 })}`,
      ),
    ).toBe(200);
  });

  test("A2: header tricks are 401: crit extensions, b64 false, an embedded jwk, jku and x5u pointing elsewhere", async () => {
    const { publicKey, privateKey } = await generateKeyPair("RS256");
    const jwk = await exportJWK(publicKey);
    const rs = await new SignJWT(good).setProtectedHeader({ alg: "RS256", jwk }).sign(privateKey);
    expect(await status(`Bearer ${rs}`)).toBe(401);
    for (const header of [
      { alg: "HS256", crit: ["exp"] },
      { alg: "HS256", crit: ["x-unknown"], "x-unknown": 1 },
      { alg: "HS256", b64: false, crit: ["b64"] },
      { alg: "RS256", jku: "http://127.0.0.1:1/jwks.json" },
      { alg: "RS256", x5u: "http://127.0.0.1:1/cert.pem" },
    ])
      expect({ header, status: await status(`Bearer ${forge(header, good)}`) }).toEqual({
        header,
        status: 401,
      });
  });

  test("A2, A3: a subject that is not usable text is 401", async () => {
    for (const sub of [undefined, "", 5, null, ["a"], { a: 1 }, "a\u0000", "\n", "x".repeat(256)])
      expect({
        sub,
        status: await status(`Bearer ${forge({ alg: "HS256" }, { sub, exp: now() + 600 })}`),
      }).toEqual({
        sub,
        status: 401,
      });
  });

  test("A2: with a JWKS configured, an HS256 token whose HMAC key is the RSA public key (key confusion) is rejected", async () => {
    const { publicKey, privateKey, jwk, url, stop } = await servedJwks();
    try {
      const verify = createTokenVerifier({ jwksUrl: url });
      const pem = await exportSPKI(publicKey);
      for (const hmacKey of [pem, JSON.stringify(jwk), Buffer.from(jwk.n as string, "base64url")])
        await expect(
          verify(forge({ alg: "HS256", kid: "k1" }, good, hmacKey as Uint8Array)),
        ).rejects.toMatchObject({
          status: 401,
        });
      await expect(verify(forge({ alg: "none", kid: "k1" }, good))).rejects.toMatchObject({
        status: 401,
      });
      const real = await new SignJWT(good)
        .setProtectedHeader({ alg: "RS256", kid: "k1" })
        .sign(privateKey);
      expect(await verify(real)).toEqual({ customerId: good.sub, admin: false });
    } finally {
      stop();
    }
  });

  test("A2: any one character of a valid token changed is 401, unless the signature decodes to the same bytes", async () => {
    const valid = await token({ sub: "mutant" });
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    await fc.assert(
      fc.asyncProperty(fc.nat(valid.length - 1), fc.constantFrom(...alphabet), async (at, c) => {
        fc.pre(valid[at] !== "." && valid[at] !== c);
        const mutant = valid.slice(0, at) + c + valid.slice(at + 1);
        const [, , signature] = valid.split(".");
        const [, , mutantSignature] = mutant.split(".");
        const sameBytes =
          at > valid.lastIndexOf(".") &&
          Buffer.from(signature, "base64url").equals(Buffer.from(mutantSignature, "base64url"));
        expect(await status(`Bearer ${mutant}`)).toBe(sameBytes ? 200 : 401);
      }),
      { numRuns },
    );
  });

  test("A1, A2: random bearer strings, segments and Authorization shapes are 401", async () => {
    const segment = fc.stringMatching(/^[A-Za-z0-9_\-+/=~]{0,60}$/);
    const shape = fc.oneof(
      fc.array(segment, { minLength: 1, maxLength: 5 }).map((parts) => `Bearer ${parts.join(".")}`),
      fc.tuple(segment, segment).map(([a, b]) => `Bearer ${b64({ alg: "HS256" })}.${a}.${b}`),
      fc.constantFrom(
        "Bearer",
        "Bearer ",
        "Bearer  x.y.z",
        "Basic Og==",
        "Token x.y.z",
        "Bearer x.y.z extra",
      ),
    );
    await fc.assert(
      fc.asyncProperty(shape, async (authorization) => {
        expect(await status(authorization)).toBe(401);
      }),
      { numRuns },
    );
  });
});

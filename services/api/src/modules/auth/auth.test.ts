import { describe, expect, test } from "bun:test";
import { jwtSecret as testSecret, token, unique } from "@commerce/testing/basics";
import { apiForFile, problemType } from "@commerce/testing/in-process";

const { api } = await apiForFile();

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

  test("O6: the token never appears in the request log", async () => {
    const secretToken = await token({ sub: "logcheck" });
    await api.call("GET", "/api/cart", { token: secretToken });
    const lines = api.logLines.join("");
    expect(lines).toContain('"route":"/api/cart"');
    expect(lines).not.toContain(secretToken);
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

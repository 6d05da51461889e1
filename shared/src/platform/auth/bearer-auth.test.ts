import { describe, expect, test } from "bun:test";
import { jwtSecret, token } from "@commerce/testing/basics";
import { Elysia } from "elysia";
import { problemErrors } from "../http/problems";
import { createLogger } from "../logger";
import { bearerAuth } from "./bearer-auth";
import { createTokenVerifier, type Principal } from "./token-verifier";

/** A service with one open route, one for any token and one for admins, under realm "shop". */
function service(verify = createTokenVerifier({ jwtSecret }), seen: Principal[] = []) {
  const auth = bearerAuth(verify, {
    realm: "shop",
    protects: (pathname) => pathname.startsWith("/api/") && pathname !== "/api/open",
    onVerified: (principal) => seen.push(principal),
  });
  const app = new Elysia()
    .use(problemErrors({ logger: createLogger("error", {}, () => {}) }))
    .use(auth)
    .get("/api/open", () => "open")
    .get("/api/any", ({ principal }) => principal, { auth: "customer" })
    .get("/api/admin", ({ principal }) => principal, { auth: "admin" });
  return async (path: string, authorization?: string) => {
    const headers: Record<string, string> = authorization ? { authorization } : {};
    const response = await app.handle(new Request(`http://localhost${path}`, { headers }));
    return {
      status: response.status,
      challenge: response.headers.get("www-authenticate"),
      type: response.headers.get("content-type"),
      body: await response.json().catch(() => undefined),
    };
  };
}

describe("bearer auth (both services)", () => {
  test("A1, V3: no or a malformed header is 401 with the service's Bearer challenge; open paths need none", async () => {
    const call = service();
    for (const header of [undefined, "Basic dXNlcjpwYXNz", "Bearer", "Bearer a b"])
      expect(await call("/api/any", header)).toMatchObject({
        status: 401,
        challenge: 'Bearer realm="shop"',
        type: "application/problem+json",
      });
    expect((await call("/api/open")).status).toBe(200);
  });

  test("A2, V3: an invalid token is 401 invalid_token; a valid one reaches the route and onVerified", async () => {
    const seen: Principal[] = [];
    const call = service(undefined, seen);
    const forged = await token({ sub: "eve" }, "another-secret-of-at-least-32-characters!!");
    expect(await call("/api/any", `Bearer ${forged}`)).toMatchObject({
      status: 401,
      challenge: 'Bearer realm="shop", error="invalid_token"',
    });
    const ok = await call("/api/any", `bearer ${await token({ sub: "ann" })}`);
    expect(ok).toMatchObject({ status: 200, body: { customerId: "ann", admin: false } });
    expect(seen).toEqual([{ customerId: "ann", admin: false }]);
  });

  test("A3, V3: a route for admins is 403 to a customer token and 200 to an admin token", async () => {
    const call = service();
    const customer = await call("/api/admin", `Bearer ${await token({ sub: "ann" })}`);
    expect(customer).toMatchObject({ status: 403, type: "application/problem+json" });
    const admin = await call("/api/admin", `Bearer ${await token({ sub: "op", scope: "admin" })}`);
    expect(admin).toMatchObject({ status: 200, body: { customerId: "op", admin: true } });
  });

  test("V3: without a verifier (no AUTH_* setting) protected paths are 503 whatever the token; open paths work", async () => {
    const unconfigured = bearerAuth(undefined, {
      realm: "shop",
      protects: (pathname) => pathname !== "/api/open",
    });
    const app = new Elysia()
      .use(problemErrors({ logger: createLogger("error", {}, () => {}) }))
      .use(unconfigured)
      .get("/api/open", () => "open")
      .get("/api/admin", () => "never", { auth: "admin" });
    for (const authorization of [
      undefined,
      `Bearer ${await token({ sub: "op", scope: "admin" })}`,
    ]) {
      const response = await app.handle(
        new Request("http://localhost/api/admin", {
          headers: authorization ? { authorization } : {},
        }),
      );
      expect(response.status).toBe(503);
      expect(response.headers.get("content-type")).toBe("application/problem+json");
      expect(((await response.json()) as { detail: string }).detail).toContain("AUTH_JWT_SECRET");
    }
    const open = await app.handle(new Request("http://localhost/api/open"));
    expect(open.status).toBe(200);
  });
});

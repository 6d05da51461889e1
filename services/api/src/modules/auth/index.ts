import { ForbiddenError, UnauthorizedError } from "@commerce/shared/errors";
import type { RateLimiter } from "@commerce/shared/rate-limit";
import { Elysia } from "elysia";
import { bearerChallenge, type Principal, type TokenVerifier } from "./service";

const principals = new WeakMap<Request, Principal>();

/** The api's one credential, for its OpenAPI document; an `admin` role means the admin scope. */
export const bearerSecurity = {
  name: "bearerAuth",
  scheme: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "An HS256 JWT signed with AUTH_JWT_SECRET (see the API description).",
  },
  who: (roles: string[]) =>
    roles.includes("admin")
      ? "Admin only: a bearer token whose `scope` claim includes `admin`; other tokens get 403."
      : "Any customer bearer token (an admin token too).",
};

/**
 * Bearer auth for every `/api/*` route (A1-A4). The token is checked when the request arrives,
 * before its body is read, so an anonymous caller learns nothing about the schemas. A route asks
 * for `auth: "customer"` or `auth: "admin"` (403 without the admin scope) and gets `principal`.
 * Each customer has a request budget (429 when spent).
 */
export function auth(verify: TokenVerifier, limiter?: RateLimiter) {
  return new Elysia({ name: "auth" })
    .onRequest(async ({ request, set }) => {
      if (!new URL(request.url).pathname.startsWith("/api/")) return;
      // The quota on every /api response; what is left once the caller is known.
      if (limiter) Object.assign(set.headers, limiter.headers());
      const header = request.headers.get("authorization");
      const match = header?.match(/^Bearer ([A-Za-z0-9._~+/=-]+)$/i);
      if (!match)
        throw new UnauthorizedError("An Authorization: Bearer token is required", {
          "www-authenticate": bearerChallenge(),
        });
      const principal = await verify(match[1]);
      try {
        limiter?.take(principal.customerId);
      } finally {
        if (limiter) Object.assign(set.headers, limiter.headers(principal.customerId));
      }
      principals.set(request, principal);
    })
    .macro({
      auth: (role: "customer" | "admin") => ({
        detail: { security: [{ bearerAuth: role === "admin" ? ["admin"] : [] }] },
        resolve({ request }) {
          const principal = principals.get(request);
          if (!principal) throw new UnauthorizedError();
          if (role === "admin" && !principal.admin) throw new ForbiddenError();
          return { principal };
        },
      }),
    });
}

import { pathnameOf } from "@commerce/shared/platform/http/url-text";
import { Elysia } from "elysia";

/**
 * U1: the operator console runs on the api's origin and reads the operator routes from the
 * browser, so those routes (GET /api/status among them, and the read-only /ready its health line
 * shows) answer CORS for the origins in CONSOLE_ORIGINS. Not /metrics: it is the scraper's (N4).
 * Never the webhook routes: a provider is no browser, and a page elsewhere must not be able to
 * post notifications.
 */
export const consolePaths = (pathname: string) =>
  pathname === "/ready" || (pathname.startsWith("/api/") && !pathname.startsWith("/api/webhooks/"));

export function consoleCors(origins: string[]) {
  const allowed = new Set(origins);
  return new Elysia({ name: "console-cors" }).onRequest(({ request, set }) => {
    const origin = request.headers.get("origin");
    if (!origin || !allowed.has(origin) || !consolePaths(pathnameOf(request.url))) return;
    set.headers["access-control-allow-origin"] = origin;
    set.headers.vary = "Origin";
    // The browser may read the problem's and the request's identity on any answer.
    set.headers["access-control-expose-headers"] = "X-Request-Id";
    if (request.method === "OPTIONS" && request.headers.has("access-control-request-method"))
      return new Response(null, {
        status: 204,
        headers: {
          "access-control-allow-origin": origin,
          "access-control-allow-methods": "GET, POST",
          "access-control-allow-headers": "authorization, content-type",
          "access-control-max-age": "600",
          vary: "Origin",
        },
      });
  });
}

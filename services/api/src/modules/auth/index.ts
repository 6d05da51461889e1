import { bearerAuth } from "@commerce/shared/auth/bearer-auth";

export { bearerSecurity } from "@commerce/shared/auth/bearer-auth";

import type { TokenVerifier } from "@commerce/shared/auth/token-verifier";
import type { RateLimiter } from "@commerce/shared/rate-limit";

/**
 * The api's bearer auth (A1-A5): every `/api/*` route needs a token (`shared/src/auth/`), and
 * each customer has a request budget (429 when spent), taken once the token is verified.
 */
export const auth = (verify: TokenVerifier, limiter?: RateLimiter) =>
  bearerAuth(verify, {
    realm: "api",
    protects: (pathname) => pathname.startsWith("/api/"),
    onVerified: limiter && ((principal) => limiter.take(principal.customerId)),
    // The quota on every /api response; what is left once the caller is known.
    responseHeaders: limiter && ((principal) => limiter.headers(principal?.customerId)),
  });

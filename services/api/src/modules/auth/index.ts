import { type BearerAuthOptions, bearerAuth } from "@commerce/shared/platform/auth/bearer-auth";

export { bearerSecurity } from "@commerce/shared/platform/auth/bearer-auth";

import type { TokenVerifier } from "@commerce/shared/platform/auth/token-verifier";
import { clientIp, type RateLimiter, rateLimitKey } from "@commerce/shared/platform/rate-limit";

/** What letting a verified caller in means on the api: its request budget and its quota headers. */
const admission = (
  limiter?: RateLimiter,
): Pick<BearerAuthOptions, "onVerified" | "responseHeaders"> => ({
  onVerified: limiter && ((principal) => limiter.take(principal.customerId)),
  // The quota on every /api response; what is left once the caller is known.
  responseHeaders: limiter && ((principal) => limiter.headers(principal?.customerId)),
});

/**
 * The api's bearer auth (A1-A5): every `/api/*` route needs a token (`shared/src/platform/auth/`), and
 * each customer has a request budget (429 when spent), taken once the token is verified; each
 * client address one for requests without a valid token (N11).
 */
export const auth = (
  verify: TokenVerifier,
  limiter?: RateLimiter,
  rejected?: { limiter: RateLimiter; trustProxy: number },
) =>
  bearerAuth(verify, {
    realm: "api",
    protects: (pathname) => pathname.startsWith("/api/"),
    ...admission(limiter),
    // N11: requests without a valid token have no subject to count against: their address pays.
    onRejected:
      rejected &&
      ((request, socketIp) =>
        rejected.limiter.take(rateLimitKey(clientIp(request, socketIp, rejected.trustProxy)))),
  });

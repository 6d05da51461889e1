import type { BearerAuthOptions } from "@commerce/shared/platform/auth/bearer-auth";

/** Every /api route but the webhook (which its signature authenticates) needs a token (V3). */
export const operatorRealm: BearerAuthOptions = {
  realm: "payments",
  protects: (pathname) => pathname.startsWith("/api/") && !pathname.startsWith("/api/webhooks/"),
};

export const whoMayCall = "Admin bearer token only (scope `admin`); a customer token is 403.";

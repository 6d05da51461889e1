import { Elysia } from "elysia";
import { ForbiddenError, HttpError, UnauthorizedError } from "../errors";
import { pathnameOf } from "../http/url-text";
import { InvalidTokenError, type Principal, type TokenVerifier } from "./token-verifier";

/** The `WWW-Authenticate` value of a 401 (RFC 6750). */
export const bearerChallenge = (realm: string, error?: string) =>
  error ? `Bearer realm="${realm}", error="${error}"` : `Bearer realm="${realm}"`;

/** The bearer credential, for the OpenAPI document; an `admin` role means the admin scope. */
export const bearerSecurity = {
  name: "bearerAuth",
  scheme: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "A JWT signed by the key of AUTH_PUBLIC_KEY or AUTH_JWKS_URL (ES256/RS256), or locally with AUTH_JWT_SECRET (HS256); see the API description.",
  },
  who: (roles: string[]) =>
    roles.includes("admin")
      ? "Admin only: a bearer token whose `scope` claim includes `admin`; other tokens get 403."
      : "Any customer bearer token (an admin token too).",
};

/** Routes that need a token on a service given no AUTH_* setting: no token can be checked. */
export class AuthNotConfiguredError extends HttpError {
  constructor() {
    super(
      503,
      "Service Unavailable",
      "This route needs a bearer token, and the service has no AUTH_PUBLIC_KEY, AUTH_JWKS_URL or AUTH_JWT_SECRET to check one",
    );
  }
}

export type BearerAuthOptions = {
  /** The realm of the challenge: the service's name. */
  realm: string;
  /** The paths that need a token; checked when the request arrives, before its body is read. */
  protects: (pathname: string) => boolean;
  /** Runs for each verified caller, e.g. the api's per-customer request budget. */
  onVerified?: (principal: Principal) => void;
  /** Headers for every protected response, before and after the caller is known (RateLimit). */
  responseHeaders?: (principal?: Principal) => Record<string, string>;
  /**
   * N11: runs for every protected request before its token is looked at, with the socket's
   * address; throwing (429) ends the request there. The payments operator routes' budget.
   */
  onArrival?: (
    request: Request,
    socketIp: string | undefined,
    headers: Record<string, string | number>,
  ) => void;
  /**
   * N11: runs for a request without a valid token before its 401, with the socket's address;
   * throwing (429) answers instead. The api's per-address budget of failed attempts.
   */
  onRejected?: (request: Request, socketIp: string | undefined) => void;
};

const bearerHeader = /^Bearer ([A-Za-z0-9._~+/=-]+)$/i;

/** The token of a request's `Authorization: Bearer` header, if it has a well-formed one. */
export const bearerTokenOf = (request: Request): string | undefined =>
  request.headers.get("authorization")?.match(bearerHeader)?.[1];

/** A response's headers as Elysia keeps them (`set.headers`), or a plain record. */
type HeaderFields = Record<string, string | number> | object;

// One map for every copy of the plugin: the copy that verifies a request may not be the copy
// whose macro resolves it (each controller `use`s the plugin for its macro).
const principals = new WeakMap<Request, Principal>();

/**
 * A verified caller let in: `onVerified` (the api's budget, which may throw 429), the response's
 * headers for that caller whatever it threw, and the caller kept for the route's `auth` macro.
 */
export function admitCaller(
  { onVerified, responseHeaders }: Pick<BearerAuthOptions, "onVerified" | "responseHeaders">,
  request: Request,
  headers: HeaderFields,
  principal: Principal,
): void {
  try {
    onVerified?.(principal);
  } finally {
    if (responseHeaders) Object.assign(headers, responseHeaders(principal));
  }
  principals.set(request, principal);
}

/**
 * Bearer auth (A1-A5, V3). The token is checked when the request arrives, before its body is
 * read, so an anonymous caller learns nothing about the schemas; 401 carries a `WWW-Authenticate:
 * Bearer` challenge. A route asks for `auth: "customer"` (any valid token) or `auth: "admin"`
 * (403 without the admin scope) and gets `principal`. Without a verifier (no AUTH_* setting) the
 * protected paths answer 503.
 */
export function bearerAuth(verify: TokenVerifier | undefined, options: BearerAuthOptions) {
  const { realm, protects, responseHeaders, onArrival, onRejected } = options;

  const admit = (request: Request, headers: HeaderFields, principal: Principal) =>
    admitCaller(options, request, headers, principal);

  const verifyNow = async (
    request: Request,
    headers: HeaderFields,
    token: string,
    socketIp: () => string | undefined,
  ) => {
    let principal: Principal;
    try {
      principal = await (verify as TokenVerifier)(token);
    } catch (error) {
      if (!(error instanceof InvalidTokenError)) throw error;
      onRejected?.(request, socketIp());
      throw new UnauthorizedError(error.message, {
        "www-authenticate": bearerChallenge(realm, "invalid_token"),
      });
    }
    admit(request, headers, principal);
  };

  return (
    new Elysia({ name: "bearer-auth", seed: realm })
      // Not async: a remembered token (A5) is answered in this turn, with no promise made; a token
      // to verify returns the verification's promise, which Elysia awaits.
      .onRequest(({ request, set, server }) => {
        if (!protects(pathnameOf(request.url))) return;
        if (responseHeaders) Object.assign(set.headers, responseHeaders());
        const socketIp = () => server?.requestIP(request)?.address;
        onArrival?.(request, socketIp(), set.headers as Record<string, string | number>);
        if (!verify) throw new AuthNotConfiguredError();
        const token = bearerTokenOf(request);
        if (!token) {
          onRejected?.(request, socketIp());
          throw new UnauthorizedError("An Authorization: Bearer token is required", {
            "www-authenticate": bearerChallenge(realm),
          });
        }
        const known = verify.remembered?.(token);
        if (known) return admit(request, set.headers, known);
        return verifyNow(request, set.headers, token, socketIp);
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
      })
  );
}

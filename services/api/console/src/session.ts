/**
 * U2: the admin token lives in this tab's sessionStorage only: never a cookie, never in a URL the
 * console sends anywhere. Closing the tab forgets it.
 */
const storageKey = "console.token";

export const session = {
  token: (): string | null => sessionStorage.getItem(storageKey),
  keep: (token: string) => sessionStorage.setItem(storageKey, token),
  forget: () => sessionStorage.removeItem(storageKey),
};

/**
 * N16: `/console#code=<code>` (the link `npm start` prints) carries a one-time code, never a
 * token. The fragment leaves the address bar at once; the code is then exchanged, once, for the
 * token. The history may keep the address: a used or expired code signs no one in.
 * A `#token=` fragment (an old link) is taken out too, and not used: a token is never in a URL.
 */
export function takeCodeFromAddress(): { code?: string; token?: true } {
  const match = location.hash.match(/^#(code|token)=([^&]+)/);
  if (!match) return {};
  history.replaceState(history.state, "", location.pathname + location.search);
  return match[1] === "code" ? { code: decodeURIComponent(match[2]) } : { token: true };
}

type Claims = { exp?: number; scope?: string; sub?: string };

function claimsOf(token: string): Claims | undefined {
  const payload = token.split(".")[1];
  if (!payload) return undefined;
  try {
    const json = atob(payload.replaceAll("-", "+").replaceAll("_", "/"));
    const claims = JSON.parse(json);
    return typeof claims === "object" && claims !== null ? claims : undefined;
  } catch {
    return undefined;
  }
}

/** The `sub` a token names (who the console acts as), read from its claims; undefined if none. */
export const subjectOf = (token: string): string | undefined => {
  const sub = claimsOf(token)?.sub;
  return typeof sub === "string" ? sub : undefined;
};

/**
 * Why a token cannot sign in, read from its own claims before any request, or undefined when it
 * looks like an admin's. The services still verify it: this only makes the message precise.
 */
export function refusalOf(token: string, now = Date.now()): string | undefined {
  const claims = claimsOf(token);
  if (!claims) return "This is not a bearer token (a JWT of three dot-separated parts).";
  if (typeof claims.exp === "number" && claims.exp * 1000 <= now)
    return `This token expired at ${new Date(claims.exp * 1000).toISOString()}. Sign in with a new one.`;
  const scopes = typeof claims.scope === "string" ? claims.scope.split(" ") : [];
  if (!scopes.includes("admin"))
    return "This token is not an admin's (it has no admin scope). The console needs an admin token.";
  return undefined;
}

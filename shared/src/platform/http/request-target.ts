import { Elysia } from "elysia";
import { ValidationError } from "../errors";

/** The routes that answer before the migrations are applied, for the platform's probes (O1-O3). */
export const probePaths = new Set(["/health", "/ready", "/metrics"]);

/** RFC 3986's host (a name, an IPv4 address or a bracketed IPv6 literal) and an optional port. */
const hostAndPort = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]+)(?::[0-9]{0,5})?$/;

/**
 * What is wrong with a request's target as the server received it (E6), if anything. Bun builds a
 * relative `request.url` from a `Host` it cannot use, and keeps a raw `#` in it: the router, the
 * URL parser and each step would each read such a target their own way.
 */
export function requestTargetProblem(request: Request): string | undefined {
  const host = request.headers.get("host");
  // E5: HTTP/1.0 may leave Host out (a load balancer's health check does); the probes' paths are
  // read alike from the bare target Bun gives it.
  if (host === null && probePaths.has(request.url)) return;
  if ((host !== null && !hostAndPort.test(host)) || !/^https?:\/\//.test(request.url))
    return "The Host header must be a host name or address, with an optional port";
  if (request.url.includes("#"))
    return "The request target must not carry a fragment (#); a client never sends one";
}

/**
 * E6: one reading of every target. A request whose `Host` is not a host (and port) or whose target
 * carries a raw `#` is 400 before any step reads its path, so every route, every step and any
 * fast path see the same path or none (RFC 9112: a `Host` with an invalid value is a 400).
 */
export function wellFormedTarget() {
  return new Elysia({ name: "request-target" }).onRequest(({ request }) => {
    const problem = requestTargetProblem(request);
    if (problem) throw new ValidationError(problem);
  });
}

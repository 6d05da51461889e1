import { Elysia } from "elysia";
import { HeadersTooLargeError } from "../errors";

/**
 * E4: the services' own limit on a request's headers (names, values and their separators). Bun's
 * HTTP parser has a limit of its own, raised to `bunHeaderCap` with `--max-http-header-size`
 * (package.json, the test harness, npm start and the compiled binaries pass it), so that headers
 * over this limit reach the app and get its 431 problem+json with X-Request-Id; only headers over
 * Bun's cap (64 KiB) still get Bun's bare 431.
 */
export const headerLimitBytes = 16 * 1024;
export const bunHeaderCap = 64 * 1024;
/** The Bun flag every launch of a service passes (see `bunHeaderCap`). */
export const bunServiceFlags = [`--max-http-header-size=${bunHeaderCap}`];

/**
 * N7: Bun's own cap on a request body, set out of reach, so that a body of any size, declared or
 * chunked, gets the service's 413 problem+json: each reader of a body counts its bytes and stops
 * at the route's limit (readBodyWithin), and a body nobody reads is discarded by Bun, not kept.
 */
export const serverBodyCap = Number.MAX_SAFE_INTEGER;

export function headerBytes(headers: Headers): number {
  let size = 0;
  for (const [name, value] of headers) size += name.length + value.length + 4;
  return size;
}

/** E4: 431 problem+json for headers over `headerLimitBytes`. */
export function requestLimits() {
  return new Elysia({ name: "request-limits" }).onRequest(({ request }) => {
    if (headerBytes(request.headers) > headerLimitBytes)
      throw new HeadersTooLargeError(headerLimitBytes);
  });
}

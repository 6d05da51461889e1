import { Elysia } from "elysia";
import { type FieldError, ValidationError } from "../errors";
import { isCleanText } from "./fields";

const decoded = (part: string, plusIsSpace: boolean): string | undefined => {
  try {
    return decodeURIComponent(plusIsSpace ? part.replaceAll("+", " ") : part);
  } catch {
    // Percent-escapes that are not UTF-8 (a lone surrogate's CESU-8 bytes among them).
    return undefined;
  }
};

/**
 * Where a request URL's path starts. Bun gives a request whose `Host` it cannot make a URL of
 * (empty, `a b`, `a@b`) its target alone, `/path?query`, without scheme or host (E5).
 */
const pathStart = (url: string): number =>
  url.charCodeAt(0) === 47 ? 0 : url.indexOf("/", url.indexOf("//") + 2);

/**
 * The path and query string of a request URL as sent, neither decoded; `query` is undefined when
 * there is no `?`.
 */
export function requestTarget(url: string): { path: string; query: string | undefined } {
  const start = pathStart(url);
  const target = start < 0 ? "/" : url.slice(start);
  const hash = target.indexOf("#");
  const withoutHash = hash < 0 ? target : target.slice(0, hash);
  const mark = withoutHash.indexOf("?");
  return mark < 0
    ? { path: withoutHash, query: undefined }
    : { path: withoutHash.slice(0, mark), query: withoutHash.slice(mark + 1) };
}

/**
 * The path of a request URL as `new URL(url).pathname` gives it, without building a URL per
 * request: a plain path is sliced out; one with an escape, a dot segment or a backslash (which the
 * URL parser rewrites) goes through the parser, on a host of its own, so that an odd `Host` (E5)
 * never makes it throw.
 */
export function pathnameOf(url: string): string {
  const start = pathStart(url);
  if (start < 0) return "/";
  let end = url.length;
  const query = url.indexOf("?", start);
  if (query >= 0) end = query;
  const hash = url.indexOf("#", start);
  if (hash >= 0 && hash < end) end = hash;
  const path = url.slice(start, end);
  return /%|\\|\/\.|\s/.test(path) ? new URL(`http://host${path}`).pathname : path;
}

/** What is wrong with a request's path and query text (N9), one entry per offending part. */
export function urlTextErrors(url: string): FieldError[] {
  const { path, query } = requestTarget(url);
  const errors: FieldError[] = [];
  const text = decoded(path, false);
  if (text === undefined || !isCleanText(text))
    errors.push({
      path: "",
      message:
        "The path must be well-formed UTF-8 text without NUL, lone surrogates or control characters",
    });
  for (const pair of query ? query.split("&") : []) {
    const equals = pair.indexOf("=");
    const rawName = equals < 0 ? pair : pair.slice(0, equals);
    const name = decoded(rawName, true);
    const value = decoded(equals < 0 ? "" : pair.slice(equals + 1), true);
    if (name !== undefined && value !== undefined && isCleanText(name) && isCleanText(value))
      continue;
    const shown = name !== undefined && isCleanText(name) ? name : "?";
    errors.push({
      path: `/${shown}`,
      message: `${shown} (query) must be well-formed UTF-8 text without NUL, lone surrogates or control characters`,
    });
    if (errors.length >= 20) break;
  }
  return errors;
}

/**
 * N9: a path or query string with NUL, a lone surrogate or a control character, written raw or
 * percent-escaped, is 400 on every route, before any route reads it: PostgreSQL refuses NUL in
 * text (SQLSTATE 22021, which was a 500) and would store a lone surrogate as U+FFFD.
 */
export function urlText() {
  return new Elysia({ name: "url-text" }).onRequest(({ request }) => {
    const errors = urlTextErrors(request.url);
    if (errors.length)
      throw new ValidationError("The request path or query string is not clean text", errors);
  });
}

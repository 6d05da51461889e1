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
 * The path and query string of an absolute request URL as sent, neither decoded; `query` is
 * undefined when there is no `?`.
 */
export function requestTarget(url: string): { path: string; query: string | undefined } {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const target = start < 0 ? "/" : url.slice(start);
  const hash = target.indexOf("#");
  const withoutHash = hash < 0 ? target : target.slice(0, hash);
  const mark = withoutHash.indexOf("?");
  return mark < 0
    ? { path: withoutHash, query: undefined }
    : { path: withoutHash.slice(0, mark), query: withoutHash.slice(mark + 1) };
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

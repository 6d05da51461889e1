import { ValidationError } from "@commerce/shared/errors";
import {
  assertContentLength,
  assertJsonContentType,
  hasBody,
  parseJsonBytes,
  readBodyWithin,
} from "@commerce/shared/http/body";
import { Elysia } from "elysia";

/**
 * Checks a request body's declared size (413) and media type (415) before anything reads it; a
 * body without a length (chunked) is counted as it is read and cut off past the limit. The body is then parsed
 * here, ahead of the routes' `parse: "json"`: Elysia's parser decodes bytes that are not UTF-8 as
 * U+FFFD, so a product could be stored with text nobody sent. Malformed JSON, or not UTF-8, is 400.
 * An empty body is left to the route: a DELETE may well carry `Content-Type: application/json`.
 */
export function jsonBody({ limitBytes }: { limitBytes: number }) {
  return new Elysia({ name: "json-body" })
    .onRequest(({ request }) => {
      if (!hasBody(request)) return;
      assertContentLength(request, limitBytes);
      assertJsonContentType(request.headers.get("content-type"));
    })
    .onParse({ as: "global" }, async ({ request }) => {
      if (!hasBody(request)) return;
      const body = await readBodyWithin(request, limitBytes);
      if (body.byteLength === 0) return;
      const parsed = parseJsonBytes(body);
      if (!parsed) throw new ValidationError("The request body is not valid JSON");
      assertPrintable(parsed.value);
      return parsed.value;
    });
}

const maxJsonDepth = 32;

/**
 * Elysia writes the offending value into its validation messages: a value whose own `toString`
 * member is not a function, or arrays nested thousands deep, cannot be turned into text, and a
 * product named `{"toString": {}}` was a 500. No request body comes near either, so both are 400.
 */
function assertPrintable(value: unknown): void {
  const pending: Array<[unknown, number]> = [[value, 1]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [node, depth] = next;
    if (typeof node !== "object" || node === null) continue;
    if (depth > maxJsonDepth)
      throw new ValidationError(`The request body is nested deeper than ${maxJsonDepth} levels`);
    if (Object.hasOwn(node, "toString"))
      throw new ValidationError("The request body has a member named toString");
    for (const member of Object.values(node)) pending.push([member, depth + 1]);
  }
}

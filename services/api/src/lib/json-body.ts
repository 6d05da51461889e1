import { ValidationError } from "@commerce/shared/platform/errors";
import {
  assertContentLength,
  assertJsonContentType,
  hasBody,
  parseJsonBytes,
  readBodyWithin,
} from "@commerce/shared/platform/http/body";
import { isCleanText } from "@commerce/shared/platform/http/fields";
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

const uncleanText =
  "The request body has text with NUL, a lone surrogate or a control character (only tab, line feed and carriage return are allowed)";

/**
 * Elysia writes the offending value into its validation messages: a value whose own `toString`
 * member is not a function, or arrays nested thousands deep, cannot be turned into text, and a
 * product named `{"toString": {}}` was a 500. No request body comes near either, so both are 400.
 * N9: nor does any carry NUL, a lone surrogate or a control character other than tab, line feed
 * and carriage return, in a member's name or its text: 400 on every route, whatever the schema.
 */
function assertPrintable(value: unknown): void {
  const pending: Array<[unknown, number, string]> = [[value, 1, ""]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [node, depth, path] = next;
    if (typeof node === "string" && !isCleanText(node, { multiline: true }))
      throw new ValidationError(uncleanText, [
        { path, message: "Text must not carry NUL, lone surrogates or control characters" },
      ]);
    if (typeof node !== "object" || node === null) continue;
    if (depth > maxJsonDepth)
      throw new ValidationError(`The request body is nested deeper than ${maxJsonDepth} levels`);
    if (Object.hasOwn(node, "toString"))
      throw new ValidationError("The request body has a member named toString");
    for (const [name, member] of Object.entries(node)) {
      if (!isCleanText(name)) throw new ValidationError(uncleanText);
      pending.push([member, depth + 1, `${path}/${name}`]);
    }
  }
}

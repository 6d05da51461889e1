import { ValidationError } from "@commerce/shared/platform/errors";
import {
  assertContentLength,
  assertJsonContentType,
  hasBody,
  parseJsonBytes,
  readBodyWithin,
} from "@commerce/shared/platform/http/body";
import { isCleanText } from "@commerce/shared/platform/http/fields";
import { genericBodyLimit } from "../providers/generic";

/** E3: the payments service's body limit, the generic webhook's; a note is far below it. */
const replayBodyLimit = genericBodyLimit;

const noteError = {
  path: "/note",
  message: "note must be text of 1 to 1000 characters without control characters",
};

/**
 * V5: the replay's optional body `{"note": "..."}` (1 to 1000 characters), read here since the
 * payments service has no JSON body parser (its webhooks read their raw bytes). No body, or an
 * empty one, is no note; anything else that is not that object is 400 and replays nothing.
 */
export async function replayNoteOf(request: Request): Promise<string | undefined> {
  if (!hasBody(request)) return undefined;
  assertContentLength(request, replayBodyLimit);
  const bytes = await readBodyWithin(request, replayBodyLimit);
  if (bytes.byteLength === 0) return undefined;
  assertJsonContentType(request.headers.get("content-type"));
  const parsed = parseJsonBytes(bytes);
  if (!parsed) throw new ValidationError("The request body is not valid JSON");
  const { value } = parsed;
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ValidationError("The request body is invalid", [
      { path: "", message: 'The body must be an object like {"note": "..."}' },
    ]);
  const { note, ...rest } = value as Record<string, unknown>;
  const extra = Object.keys(rest)[0];
  if (extra !== undefined)
    throw new ValidationError("The request body is invalid", [
      { path: `/${extra}`, message: "Only note may be sent" },
    ]);
  if (note === undefined) return undefined;
  const length = typeof note === "string" ? [...note].length : 0;
  if (
    typeof note !== "string" ||
    length < 1 ||
    length > 1000 ||
    !isCleanText(note, { multiline: true })
  )
    throw new ValidationError("The request body is invalid", [noteError]);
  return note;
}

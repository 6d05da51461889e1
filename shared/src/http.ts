import { Elysia, type ValidationError as ElysiaValidationError } from "elysia";
import {
  type FieldError,
  HttpError,
  NotFoundError,
  PayloadTooLargeError,
  problemResponse,
  UnavailableError,
  UnsupportedMediaTypeError,
  ValidationError,
} from "./errors";
import { describeError, type Logger } from "./logger";
import type { Metrics } from "./metrics";

type RequestMeta = { id: string; startedAt: number };

const requestMeta = new WeakMap<Request, RequestMeta>();
const saneRequestId = /^[A-Za-z0-9._:-]{1,128}$/;

/** The id of the request being served (O5); the same value the response header carries. */
export function requestIdOf(request: Request): string {
  return requestMeta.get(request)?.id ?? "";
}

const isDatabaseDown = (error: unknown): boolean => {
  // drizzle wraps the driver's error as its cause.
  const cause = (error as { cause?: unknown })?.cause;
  if (cause && cause !== error && isDatabaseDown(cause)) return true;
  const code = (error as { code?: unknown })?.code;
  return (
    typeof code === "string" &&
    (code.startsWith("CONNECT") ||
      code === "ECONNREFUSED" ||
      code === "ECONNRESET" ||
      code === "57P01" ||
      code === "57P03" ||
      code.startsWith("08"))
  );
};

const isFieldError = (value: unknown): value is FieldError =>
  typeof value === "object" && value !== null && "path" in value && "message" in value;

/** One entry per offending field: a schema's own message first, else TypeBox's summary. */
function validationProblem(error: ElysiaValidationError): ValidationError {
  const where =
    { body: "body", query: "query string", params: "path", headers: "headers" }[error.type] ??
    "input";
  const errors: FieldError[] = isFieldError(error.customError) ? [error.customError] : [];
  for (const e of error.all) {
    const path = "path" in e ? e.path : "";
    if (errors.some((known) => known.path === path)) continue;
    errors.push({ path, message: ("summary" in e && e.summary) || e.message });
    if (errors.length >= 20) break;
  }
  return new ValidationError(`The request ${where} is invalid`, errors);
}

/**
 * Request ids (O5), one JSON log line and one metric sample per request (O3, O6), and every error
 * turned into problem+json (E1-E3). Registered once, on the outermost app.
 */
export function httpPlugin({ logger, metrics }: { logger: Logger; metrics: Metrics }) {
  return new Elysia({ name: "http" })
    .onRequest(({ request, set }) => {
      const sent = request.headers.get("x-request-id");
      const id = sent && saneRequestId.test(sent) ? sent : crypto.randomUUID();
      requestMeta.set(request, { id, startedAt: performance.now() });
      set.headers["x-request-id"] = id;
    })
    .onError({ as: "global" }, ({ code, error, request, set }) => {
      let problem: HttpError;
      // A parser's own error (413, 415, 400) arrives wrapped in Elysia's ParseError.
      const cause = code === "PARSE" ? (error as Error).cause : undefined;
      if (error instanceof HttpError) problem = error;
      else if (cause instanceof HttpError) problem = cause;
      else if (code === "VALIDATION") problem = validationProblem(error as ElysiaValidationError);
      else if (code === "PARSE")
        problem = new ValidationError("The request body is not valid JSON");
      else if (code === "NOT_FOUND") problem = new NotFoundError("No such route");
      else if (isDatabaseDown(error)) {
        logger.error("dependency unavailable", {
          request_id: requestIdOf(request),
          ...describeError(error),
        });
        problem = new UnavailableError();
      } else {
        logger.error("unexpected error", {
          request_id: requestIdOf(request),
          ...describeError(error),
        });
        problem = new HttpError(500, "Internal Server Error", "An unexpected error occurred");
      }
      set.status = problem.status;
      return problemResponse(problem, { "x-request-id": requestIdOf(request) });
    })
    .onAfterResponse({ as: "global" }, ({ request, route, set }) => {
      const meta = requestMeta.get(request);
      if (!meta) return;
      const seconds = (performance.now() - meta.startedAt) / 1000;
      const status = typeof set.status === "number" ? set.status : 200;
      const labels = {
        method: request.method,
        route: route || "unmatched",
        status: String(status),
      };
      metrics.httpRequests.inc(labels);
      metrics.httpDuration.observe(labels, seconds);
      logger.info("request", {
        request_id: meta.id,
        method: request.method,
        route: labels.route,
        status,
        duration_ms: Math.round(seconds * 100_000) / 100,
      });
    });
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Strict JSON from raw bytes: undefined unless they are UTF-8 and JSON (no U+FFFD substitutes). */
export function parseJsonBytes(bytes: Uint8Array): { text: string; value: unknown } | undefined {
  try {
    const text = utf8.decode(bytes);
    return { text, value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

/**
 * Checks a request body's declared size (413) and media type (415) before anything reads it; the
 * server's own `maxRequestBodySize` stops bodies that lie about their size. The body is then parsed
 * here, ahead of the routes' `parse: "json"`: Elysia's parser decodes bytes that are not UTF-8 as
 * U+FFFD, so a product could be stored with text nobody sent. Malformed JSON, or not UTF-8, is 400.
 * An empty body is left to the route: a DELETE may well carry `Content-Type: application/json`.
 */
export function jsonBodyPlugin({ limitBytes }: { limitBytes: number }) {
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

export function assertContentLength(request: Request, limitBytes: number): void {
  const declared = Number(request.headers.get("content-length") ?? 0);
  if (declared > limitBytes) throw new PayloadTooLargeError(limitBytes);
}

export function assertJsonContentType(contentType: string | null): void {
  const mediaType = (contentType ?? "").split(";")[0].trim().toLowerCase();
  if (mediaType !== "application/json") throw new UnsupportedMediaTypeError();
}

/**
 * The raw body, 413 past `limitBytes`: first by the declared Content-Length, then by the bytes
 * actually read, stopping as soon as they pass the limit (a chunked flood is never buffered).
 */
export async function readBodyWithin(request: Request, limitBytes: number): Promise<Uint8Array> {
  assertContentLength(request, limitBytes);
  // A declared length frames the body: read it whole (cheaper than a stream), then make sure.
  if (request.headers.has("content-length")) {
    const body = new Uint8Array(await request.arrayBuffer());
    if (body.byteLength > limitBytes) throw new PayloadTooLargeError(limitBytes);
    return body;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body ?? []) {
    size += chunk.byteLength;
    if (size > limitBytes) throw new PayloadTooLargeError(limitBytes);
    chunks.push(chunk);
  }
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

const hasBody = (request: Request) =>
  request.headers.has("content-type") ||
  request.headers.has("transfer-encoding") ||
  Number(request.headers.get("content-length") ?? 0) > 0;

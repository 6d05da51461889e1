import { Elysia, type ValidationError as ElysiaValidationError } from "elysia";
import { databaseUnavailable, lockTimedOut } from "../database";
import {
  ClientClosedError,
  type FieldError,
  HttpError,
  MethodNotAllowedError,
  NotFoundError,
  problemResponse,
  UnavailableError,
  ValidationError,
} from "../errors";
import { describeError, type Logger } from "../logger";
import type { Metrics } from "../metrics";
import { requestLogFields, responseHeadersOf } from "./request-log";
import type { RouteMethods } from "./route-methods";
import { pathnameOf } from "./url-text";

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
 * The problem an error is answered with (E1-E4): an HttpError as it is, Elysia's own errors
 * (`code`) in words, an unavailable database 503, anything else 500. The last two are logged with
 * the request's fields, without the error's text reaching the answer. With `routes`, a path that
 * is served, asked with a method it is not served with, is 405 with `Allow` (E4).
 */
export function problemOf(
  error: unknown,
  code: unknown,
  request: Request,
  { logger, routes }: { logger: Logger; routes?: RouteMethods },
): HttpError {
  // A parser's own error (413, 415, 400) arrives wrapped in Elysia's ParseError.
  const cause = code === "PARSE" ? (error as Error).cause : undefined;
  if (error instanceof HttpError) return error;
  if (cause instanceof HttpError) return cause;
  if (code === "VALIDATION") return validationProblem(error as ElysiaValidationError);
  if (code === "PARSE") return new ValidationError("The request body is not valid JSON");
  if (code === "NOT_FOUND") {
    const allowed = routes?.allowed(pathnameOf(request.url)) ?? [];
    // A target no route matched although its method is served there (`/a/../../health`, whose
    // dot segments the parser resolves and the router does not) is not a wrong method.
    return allowed.length && !allowed.includes(request.method)
      ? new MethodNotAllowedError(request.method, allowed)
      : new NotFoundError("No such route");
  }
  // N14 (v5): a lock waited on past its lock_timeout; the request changed nothing, so it may retry.
  if (lockTimedOut(error)) {
    logger.warn("lock wait timed out", { ...requestLogFields(request), ...describeError(error) });
    return new UnavailableError("Another request holds what this one needs; retry");
  }
  if (databaseUnavailable(error)) {
    logger.error("dependency unavailable", {
      ...requestLogFields(request),
      ...describeError(error),
    });
    return new UnavailableError();
  }
  logger.error("unexpected error", { ...requestLogFields(request), ...describeError(error) });
  return new HttpError(500, "Internal Server Error", "An unexpected error occurred");
}

/**
 * A problem's answer: with the request's own headers (id, trace), and those a plugin set for
 * every response (the rate limit's, CORS), which survive the error answer too.
 */
export function problemAnswer(
  problem: HttpError,
  request: Request,
  headers: Record<string, unknown>,
): Response {
  const kept = responseHeadersOf(request);
  for (const name of [
    "ratelimit-policy",
    "ratelimit",
    "access-control-allow-origin",
    "access-control-expose-headers",
    "vary",
  ]) {
    const value = headers[name];
    if (typeof value === "string") kept[name] = value;
  }
  return problemResponse(problem, kept);
}

/** Every error, thrown or Elysia's own, answered as problem+json (`problemOf`, `problemAnswer`). */
export function problemErrors(deps: { logger: Logger; routes?: RouteMethods }) {
  return new Elysia({ name: "problem-errors" }).onError(
    { as: "global" },
    ({ code, error, request, set }) => {
      const problem = problemOf(error, code, request, deps);
      if (problem instanceof ClientClosedError)
        deps.logger.info("client_closed", {
          ...requestLogFields(request),
          method: request.method,
          path: pathnameOf(request.url),
        });
      set.status = problem.status;
      return problemAnswer(problem, request, set.headers);
    },
  );
}

/**
 * E5: the answer to an error no route caught, Bun.serve's `error` (which would otherwise be Bun's
 * development page or its bare 500): problem+json with an X-Request-Id of its own, one log line and
 * a sample of `http_requests_total` (method `unknown`, route `unmatched`). Bun hands over the
 * error alone, not its request.
 */
export function uncaughtErrorAnswer({ logger, metrics }: { logger: Logger; metrics: Metrics }) {
  return (error: Error): Response => {
    const id = crypto.randomUUID();
    logger.error("unexpected error", { request_id: id, ...describeError(error) });
    metrics.http.record("unknown", "unmatched", 500, 0);
    return problemResponse(
      new HttpError(500, "Internal Server Error", "An unexpected error occurred"),
      { "x-request-id": id },
    );
  };
}

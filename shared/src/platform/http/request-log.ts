import { Elysia } from "elysia";
import type { LogFields, Logger } from "../logger";
import type { Metrics } from "../metrics";
import {
  formatTraceparent,
  parseTraceparent,
  type Span,
  type TraceContext,
  type Tracer,
  traceFields,
} from "../tracing";

type RequestMeta = { id: string; startedAt: number; span: Span };

const requestMeta = new WeakMap<Request, RequestMeta>();
const saneRequestId = /^[A-Za-z0-9._:-]{1,128}$/;

/** The id of the request being served (O5); the same value the response header carries. */
export function requestIdOf(request: Request): string {
  return requestMeta.get(request)?.id ?? "";
}

/** The trace context of the request being served (O8): the caller's trace, this request's span. */
export function traceOf(request: Request): TraceContext | undefined {
  return requestMeta.get(request)?.span.context;
}

/** What every log line written for a request carries (O5, O6, O8). */
export function requestLogFields(request: Request): LogFields {
  return { request_id: requestIdOf(request), ...traceFields(traceOf(request)) };
}

/** The headers every response carries, for responses built outside `set` (problem+json). */
export function responseHeadersOf(request: Request): Record<string, string> {
  const context = traceOf(request);
  return {
    "x-request-id": requestIdOf(request),
    ...(context ? { traceparent: formatTraceparent(context) } : {}),
  };
}

type RequestLogDeps = { logger: Logger; metrics: Metrics; tracer: Tracer };

/**
 * O5, O8: a request's id (the caller's `X-Request-Id` when sane, else a new one) and its span (the
 * caller's `traceparent` continued, or a new trace; an invalid one is ignored, never a 400), kept
 * for its log fields and written into the headers it will answer with.
 */
export function beginRequest(
  tracer: Tracer,
  request: Request,
  headers: Record<string, string | number>,
): void {
  const sent = request.headers.get("x-request-id");
  const id = sent && saneRequestId.test(sent) ? sent : crypto.randomUUID();
  const span = tracer.startSpan(request.method, {
    parent: parseTraceparent(request.headers.get("traceparent")),
    kind: "server",
  });
  requestMeta.set(request, { id, startedAt: performance.now(), span });
  headers["x-request-id"] = id;
  headers.traceparent = formatTraceparent(span.context);
}

/**
 * O3, O6, O8: once a request begun by `beginRequest` is answered, one metric sample, one JSON log
 * line and the span's end. `routeOf` is the route's template (`/api/products/:id`), none when no
 * route matched.
 */
export function endRequest(
  { logger, metrics }: Omit<RequestLogDeps, "tracer">,
  request: Request,
  routeOf: string | undefined,
  status: number,
): void {
  const meta = requestMeta.get(request);
  if (!meta) return;
  const seconds = (performance.now() - meta.startedAt) / 1000;
  const route = routeOf || "unmatched";
  metrics.http.record(request.method, route, status, seconds);
  // Fields written out, not spread: this line is written for every request.
  const context = meta.span.context;
  logger.info("request", {
    request_id: meta.id,
    trace_id: context.traceId,
    span_id: context.spanId,
    method: request.method,
    route,
    status,
    duration_ms: Math.round(seconds * 100_000) / 100,
  });
  const { span } = meta;
  if (span.recording) {
    if (routeOf) span.rename(`${request.method} ${routeOf}`);
    span.set({
      "http.request.method": request.method,
      "http.route": route,
      "http.response.status_code": status,
      "request.id": meta.id,
    });
    if (status >= 500) span.fail();
  }
  span.end();
}

/**
 * `beginRequest` when each request arrives and `endRequest` once it is answered, as Elysia hooks.
 * Registered once, on the outermost app.
 */
export function requestLog(deps: RequestLogDeps) {
  return new Elysia({ name: "request-log" })
    .onRequest(({ request, set }) => beginRequest(deps.tracer, request, set.headers))
    .onAfterResponse({ as: "global" }, ({ request, route, set }) =>
      endRequest(deps, request, route, typeof set.status === "number" ? set.status : 200),
    );
}

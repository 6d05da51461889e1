import { Elysia } from "elysia";
import type { Logger } from "../logger";
import type { Metrics } from "../metrics";

type RequestMeta = { id: string; startedAt: number };

const requestMeta = new WeakMap<Request, RequestMeta>();
const saneRequestId = /^[A-Za-z0-9._:-]{1,128}$/;

/** The id of the request being served (O5); the same value the response header carries. */
export function requestIdOf(request: Request): string {
  return requestMeta.get(request)?.id ?? "";
}

/**
 * Request ids (O5), then one JSON log line and one metric sample per request (O3, O6).
 * Registered once, on the outermost app.
 */
export function requestLog({ logger, metrics }: { logger: Logger; metrics: Metrics }) {
  return new Elysia({ name: "request-log" })
    .onRequest(({ request, set }) => {
      const sent = request.headers.get("x-request-id");
      const id = sent && saneRequestId.test(sent) ? sent : crypto.randomUUID();
      requestMeta.set(request, { id, startedAt: performance.now() });
      set.headers["x-request-id"] = id;
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

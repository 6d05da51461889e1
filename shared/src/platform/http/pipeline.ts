import { type AnyElysia, Elysia } from "elysia";
import { UnavailableError } from "../errors";
import type { Logger } from "../logger";
import type { Metrics } from "../metrics";
import type { Tracer } from "../tracing";
import { problemErrors } from "./problems";
import { requestLimits } from "./request-limits";
import { requestLog } from "./request-log";
import { probePaths, wellFormedTarget } from "./request-target";
import type { RouteMethods } from "./route-methods";
import { requestTarget, urlText } from "./url-text";

/** X2: 503 for every route but the operational ones until the service's tables exist. */
export function migrationGate(migrated: () => boolean) {
  return new Elysia({ name: "migration-gate" }).onRequest(({ request }) => {
    if (migrated() || probePaths.has(requestTarget(request.url).path)) return;
    throw new UnavailableError("Starting: waiting for a writable database");
  });
}

export type PipelineDeps = {
  logger: Logger;
  metrics: Metrics;
  tracer: Tracer;
  /** E4: the app's own routes, for a 405 with `Allow`. */
  routes: RouteMethods;
  /** X2: whether the service's migrations are applied. */
  migrated: () => boolean;
};

export type ServiceSteps = {
  /** Who is calling and what they may still spend (A1-A5, N11), and what must answer before it. */
  callers: AnyElysia[];
  /** The request body's limits and parsing (N7, N9), on a service that reads JSON bodies. */
  body?: AnyElysia;
};

/**
 * E6: the steps every request meets, in order, declared once; a service's app is this list and
 * then its routes, and no route is served beside it. A step added here reaches every route of
 * both services.
 */
export function pipelineSteps(deps: PipelineDeps, own: ServiceSteps): [string, AnyElysia][] {
  return [
    // O3, O5, O6, O8: the id and span when it arrives; the log line and metric once answered.
    ["request id, span, log line and metric", requestLog(deps)],
    // E1-E4: every error, thrown by a step or a route, answered as problem+json.
    ["problem answers", problemErrors(deps)],
    // E6: a target every later step and the router read alike (a usable Host, no raw `#`).
    ["well-formed target", wellFormedTarget()],
    // E4: headers over the service's limit are its own 431 problem+json.
    ["header limits", requestLimits()],
    // Credentials before the body, so anonymous callers learn nothing of the schemas.
    ...own.callers.map((step): [string, AnyElysia] => ["caller and budget", step]),
    ...(own.body ? [["body limits and JSON", own.body] as [string, AnyElysia]] : []),
    // N9: no NUL, lone surrogate or control character in the path or query string.
    ["clean path and query", urlText()],
    ["migrations applied", migrationGate(deps.migrated)],
  ];
}

/** The pipeline as one plugin, for `createApp` to `use` before its routes. */
export function requestPipeline(deps: PipelineDeps, own: ServiceSteps) {
  // `use` adds to the instance itself: the plugin keeps a plain type, the steps add none a route reads.
  const pipeline = new Elysia({ name: "request-pipeline" });
  for (const [, step] of pipelineSteps(deps, own)) pipeline.use(step);
  return pipeline;
}

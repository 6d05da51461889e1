import { describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { createLogger } from "../logger";
import { Metrics } from "../metrics";
import { idTracer } from "../tracing";
import { pipelineSteps, requestPipeline } from "./pipeline";
import { RouteMethods } from "./route-methods";

/** The pipeline with one route behind it, as a service's `createApp` builds it. */
function service(migrated = () => true) {
  const lines: Record<string, unknown>[] = [];
  const routes = new RouteMethods();
  const deps = {
    logger: createLogger("info", {}, (line) => lines.push(JSON.parse(line))),
    metrics: new Metrics(),
    tracer: idTracer,
    routes,
    migrated,
  };
  const app = new Elysia({ normalize: false })
    .use(requestPipeline(deps, { callers: [] }))
    .get("/api/things/:id", ({ params }) => ({ id: params.id }));
  routes.readFrom(() => app.routes);
  const ask = async (path: string, headers: Record<string, string> = {}) => {
    const response = await app.handle(new Request(`http://localhost${path}`, { headers }));
    const requestId = response.headers.get("x-request-id");
    // The log line is written once the answer is sent (onAfterResponse).
    await Bun.sleep(0);
    return {
      status: response.status,
      type: response.headers.get("content-type"),
      logged: lines.filter((line) => line.msg === "request" && line.request_id === requestId),
    };
  };
  return { ask };
}

describe("the request pipeline", () => {
  test("E6: the steps, in the order every request meets them", () => {
    const names = pipelineSteps(
      {
        logger: createLogger("error", {}, () => {}),
        metrics: new Metrics(),
        tracer: idTracer,
        routes: new RouteMethods(),
        migrated: () => true,
      },
      { callers: [new Elysia()], body: new Elysia() },
    ).map(([name]) => name);
    expect(names).toEqual([
      "request id, span, log line and metric",
      "problem answers",
      "well-formed target",
      "header limits",
      "caller and budget",
      "body limits and JSON",
      "clean path and query",
      "migrations applied",
    ]);
  });

  test("E6, E4, N9, X2, O6: each step's refusal is problem+json with the request's id, logged", async () => {
    const { ask } = service();
    const refusals: Array<[string, Record<string, string>, number]> = [
      ["/api/things/1", { host: "a/b" }, 400],
      ["/api/things/1", { "x-big": "x".repeat(17 * 1024) }, 431],
      ["/api/things/%00", {}, 400],
      ["/api/things/1", {}, 200],
      ["/api/nothing", {}, 404],
    ];
    for (const [path, headers, status] of refusals) {
      const answer = await ask(path, headers);
      expect({ path, status: answer.status }).toEqual({ path, status });
      expect(answer.logged).toMatchObject([{ status }]);
    }
    const starting = service(() => false);
    expect(await starting.ask("/api/things/1")).toMatchObject({
      status: 503,
      type: "application/problem+json",
    });
    // An operational path passes the gate (this app has no such route: 404, not 503).
    expect((await starting.ask("/health")).status).toBe(404);
  });
});

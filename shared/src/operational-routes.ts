import { Elysia, t } from "elysia";
import { UnavailableError } from "./errors";
import type { Metrics } from "./metrics";

export type ReadinessCheck = { name: string; check: () => Promise<boolean> | boolean };

/** `/health`, `/ready` and `/metrics` (O1-O3): no auth, same on both services. */
export function operationalRoutes({
  metrics,
  checks,
}: {
  metrics: Metrics;
  checks: ReadinessCheck[];
}) {
  return new Elysia({ name: "operational-routes", detail: { tags: ["Operations"] } })
    .get("/health", () => ({ status: "ok" as const }), {
      response: t.Object({ status: t.Literal("ok") }),
      detail: { summary: "Liveness: 200 while the process runs" },
    })
    .get(
      "/ready",
      async () => {
        const results = await Promise.all(
          checks.map(async ({ name, check }) => {
            try {
              return { name, up: await withTimeout(Promise.resolve(check()), 2000) };
            } catch {
              return { name, up: false };
            }
          }),
        );
        const down = results.filter((r) => !r.up).map((r) => r.name);
        if (down.length) throw new UnavailableError(`Not ready: ${down.join(", ")} unavailable`);
        return { status: "ready" as const };
      },
      {
        response: t.Object({ status: t.Literal("ready") }),
        detail: { summary: "Readiness: 200 when the database and NATS are reachable, else 503" },
      },
    )
    .get(
      "/metrics",
      async () =>
        new Response(await metrics.render(), {
          headers: { "content-type": metrics.contentType },
        }),
      {
        detail: {
          summary: "Prometheus metrics",
          responses: {
            200: {
              description: "The metrics in Prometheus's text format",
              content: { "text/plain": { schema: { type: "string" } } },
            },
          },
        },
      },
    );
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: Timer | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("timeout")), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

import { timingSafeEqual } from "node:crypto";
import { Elysia, t } from "elysia";
import { UnauthorizedError, UnavailableError } from "./errors";
import type { Metrics } from "./metrics";
import { problems } from "./openapi";

export type ReadinessCheck = { name: string; check: () => Promise<boolean> | boolean };

/**
 * F7: something degraded that does not make the service unready (a provider's open circuit):
 * named in `/ready`'s `degraded` while `note` answers text.
 */
export type ReadinessNote = { name: string; note: () => string | undefined };

/**
 * N4: whether `authorization` is `Bearer <token>`, compared in constant time (a digest of each
 * side, so neither the comparison nor an early length check tells how much of a guess matched).
 */
export function scraperAllowed(token: string | undefined, authorization: string | null): boolean {
  if (token === undefined) return true;
  const digest = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest();
  return timingSafeEqual(digest(`Bearer ${token}`), digest(authorization ?? ""));
}

/**
 * `/health`, `/ready` and `/metrics` (O1-O3), same on both services. `/metrics` needs the
 * scraper's bearer token when `metricsToken` is set (N4); the other two need nothing.
 */
export function operationalRoutes({
  metrics,
  checks,
  notes = [],
  metricsToken,
}: {
  metrics: Metrics;
  checks: ReadinessCheck[];
  notes?: ReadinessNote[];
  metricsToken?: string;
}) {
  return new Elysia({ name: "operational-routes", detail: { tags: ["Operations"] } })
    .get("/health", () => ({ status: "ok" as const }), {
      response: t.Object({ status: t.Literal("ok") }),
      detail: { operationId: "getHealth", summary: "Liveness: 200 while the process runs" },
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
        const degraded = Object.fromEntries(
          notes.flatMap(({ name, note }) => {
            const text = note();
            return text === undefined ? [] : [[name, text]];
          }),
        );
        return Object.keys(degraded).length
          ? { status: "ready" as const, degraded }
          : { status: "ready" as const };
      },
      {
        // D5: the 503 is documented, with the Problem naming what is down.
        response: {
          200: t.Object({
            status: t.Literal("ready"),
            degraded: t.Optional(
              t.Record(t.String(), t.String(), {
                description:
                  "Present when something is degraded without making the service unready, e.g. a payment provider's open circuit",
              }),
            ),
          }),
          ...problems(503),
        },
        detail: {
          operationId: "getReadiness",
          summary: "Readiness: 200 when the database and NATS are reachable, else 503",
        },
      },
    )
    .get(
      "/metrics",
      async ({ request }) => {
        if (!scraperAllowed(metricsToken, request.headers.get("authorization"))) {
          throw new UnauthorizedError("/metrics needs the scraper's bearer token", {
            "www-authenticate": 'Bearer realm="metrics"',
          });
        }
        return new Response(await metrics.render(), {
          headers: { "content-type": metrics.contentType },
        });
      },
      {
        detail: {
          operationId: "getMetrics",
          summary: "Prometheus metrics",
          description:
            "With METRICS_TOKEN set, the scraper sends `Authorization: Bearer <METRICS_TOKEN>`; " +
            "without it the answer is 401. Values read from the database are at most 5 s old.",
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

import { bearerAuth, bearerSecurity } from "@commerce/shared/platform/auth/bearer-auth";
import { databaseIsUp } from "@commerce/shared/platform/database";
import { requestPipeline } from "@commerce/shared/platform/http/pipeline";
import { RouteMethods } from "@commerce/shared/platform/http/route-methods";
import { openapiDocs } from "@commerce/shared/platform/openapi";
import { operationalRoutes } from "@commerce/shared/platform/operational-routes";
import { deadOutboxController } from "@commerce/shared/platform/outbox/dead-outbox";
import { clientIp, rateLimitKey } from "@commerce/shared/platform/rate-limit";
import { Elysia } from "elysia";
import type { PaymentsDeps } from "./deps";
import { consoleCors } from "./lib/console-cors";
import { operatorRealm } from "./lib/operator-realm";
import { auditController } from "./modules/audit";
import { notificationsController } from "./modules/notifications";
import { operatorController } from "./modules/operator";
import { providersOf } from "./modules/providers";
import { refusalsController } from "./modules/refusals";
import { statusController } from "./modules/status";

export function createApp(deps: PaymentsDeps) {
  const providers = providersOf(deps.webhook, deps.providers);
  // No JSON body parser here: the webhook reads and checks its raw bytes itself (W1, W2).
  // E4: a served path asked with another method is 405, from this app's own routes.
  const routes = new RouteMethods();
  const app = new Elysia({ normalize: false })
    .use(
      requestPipeline(
        { ...deps, routes },
        {
          callers: [
            // Before the bearer check, so a browser's preflight (no token) is answered.
            consoleCors(deps.consoleOrigins),
            // The webhook is authenticated by its signature; every other /api route is an operator's.
            bearerAuth(deps.verifyToken, {
              ...operatorRealm,
              // N11: the operator routes have a budget per client address, before any token check.
              onArrival(request, socketIp, headers) {
                const key = rateLimitKey(clientIp(request, socketIp, deps.trustProxy));
                try {
                  deps.operatorLimiter.take(key);
                } finally {
                  Object.assign(headers, deps.operatorLimiter.headers(key));
                }
              },
            }),
          ],
        },
      ),
    )
    .use(
      openapiDocs({
        title: "Payments",
        description:
          "Receives payment providers' signed notifications (webhooks: the generic format, " +
          "Stripe and Adyen when configured) and publishes order-paid messages. Every /api " +
          "route is rate limited per source address. Operators " +
          "(admin bearer token) read stored notifications and replay their messages.",
        rateLimited: (path) => path.startsWith("/api/"),
        security: [...providers.map((provider) => provider.document.security), bearerSecurity],
        tags: [
          {
            name: "Operations",
            description: "Liveness, readiness and metrics, for the platform; no credentials",
          },
          {
            name: "Payment notifications",
            description: "Payment providers' signed webhooks: generic, Stripe and Adyen",
          },
          {
            name: "Operator",
            description:
              "What arrived and what became of it, and replaying a message; admin token only",
          },
        ],
      }),
    )
    .use(
      operationalRoutes({
        metrics: deps.metrics,
        metricsToken: deps.metricsToken,
        checks: [{ name: "database", check: () => databaseIsUp(deps.sql) }, ...deps.readiness],
        notes: deps.readinessNotes,
      }),
    )
    .use(notificationsController(deps, providers))
    // Before the notification routes, so `rejected` is never read as a notification id.
    .use(refusalsController(deps))
    .use(operatorController(deps))
    .use(
      deadOutboxController(
        bearerAuth(deps.verifyToken, operatorRealm),
        deps.deadOutbox,
        "Operator",
      ),
    )
    .use(statusController(deps))
    .use(auditController(deps));
  routes.readFrom(() => app.routes);
  return app;
}

export type App = ReturnType<typeof createApp>;

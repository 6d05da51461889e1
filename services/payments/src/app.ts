import { bearerAuth, bearerSecurity } from "@commerce/shared/auth/bearer-auth";
import { databaseIsUp } from "@commerce/shared/database";
import { problemErrors } from "@commerce/shared/http/problems";
import { requestLog } from "@commerce/shared/http/request-log";
import { openapiDocs } from "@commerce/shared/openapi";
import { operationalRoutes } from "@commerce/shared/operational-routes";
import { Elysia } from "elysia";
import type { PaymentsDeps } from "./deps";
import { notificationsController } from "./modules/notifications";
import { signatureSecurity } from "./modules/notifications/model";
import { operatorController, operatorRealm } from "./modules/operator";

export function createApp(deps: PaymentsDeps) {
  // No JSON body parser here: the webhook reads and checks its raw bytes itself (W1, W2).
  return (
    new Elysia({ normalize: false })
      .use(requestLog(deps))
      .use(problemErrors(deps))
      // The webhook is authenticated by its signature; every other /api route is an operator's.
      .use(bearerAuth(deps.verifyToken, operatorRealm))
      .use(
        openapiDocs({
          title: "Payments",
          description:
            "Receives the payment provider's signed notifications (webhooks) and publishes " +
            "order-paid messages. The webhook is rate limited per source address. Operators " +
            "(admin bearer token) read stored notifications and replay their messages.",
          rateLimited: (path) => path === "/api/webhooks/payment",
          security: [signatureSecurity, bearerSecurity],
        }),
      )
      .use(
        operationalRoutes({
          metrics: deps.metrics,
          checks: [{ name: "database", check: () => databaseIsUp(deps.sql) }, ...deps.readiness],
        }),
      )
      .use(notificationsController(deps))
      .use(operatorController(deps))
  );
}

export type App = ReturnType<typeof createApp>;

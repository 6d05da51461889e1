import { databaseIsUp } from "@commerce/shared/database";
import { problemErrors } from "@commerce/shared/http/problems";
import { requestLog } from "@commerce/shared/http/request-log";
import { openapiDocs } from "@commerce/shared/openapi";
import { operationalRoutes } from "@commerce/shared/operational-routes";
import { Elysia } from "elysia";
import type { PaymentsDeps } from "./deps";
import { notificationsController } from "./modules/notifications";
import { signatureSecurity } from "./modules/notifications/model";

export function createApp(deps: PaymentsDeps) {
  // No JSON body parser here: the webhook reads and checks its raw bytes itself (W1, W2).
  return new Elysia({ normalize: false })
    .use(requestLog(deps))
    .use(problemErrors(deps))
    .use(
      openapiDocs({
        title: "Payments",
        description:
          "Receives the payment provider's signed notifications (webhooks) and publishes " +
          "order-paid messages. The webhook is rate limited per source address.",
        rateLimited: (path) => path === "/api/webhooks/payment",
        security: [signatureSecurity],
      }),
    )
    .use(
      operationalRoutes({
        metrics: deps.metrics,
        checks: [{ name: "database", check: () => databaseIsUp(deps.sql) }, ...deps.readiness],
      }),
    )
    .use(notificationsController(deps));
}

export type App = ReturnType<typeof createApp>;

import { bearerAuth } from "@commerce/shared/platform/auth/bearer-auth";
import { integer } from "@commerce/shared/platform/http/fields";
import { named, problems } from "@commerce/shared/platform/openapi";
import { Elysia, t } from "elysia";
import type { PaymentsDeps } from "../../deps";
import { operatorRealm, whoMayCall } from "../../lib/operator-realm";

const figure = (description: string) =>
  t.Nullable(integer({ minimum: 0, description: `${description}; null when it cannot be read` }));

/** U3: the payments service's figures for the console's health line (the readings of /metrics). */
export const paymentsStatus = named(
  "PaymentsStatus",
  t.Object({
    outbox_backlog: figure("Outbox rows (order-paid messages) not yet published to JetStream"),
    outbox_dead: figure("Outbox rows set aside: their publication cannot succeed"),
  }),
  {
    description: "The payments service's operating figures: what waits to go out",
    examples: [{ outbox_backlog: 0, outbox_dead: 0 }],
  },
);

/**
 * U3: GET /api/status for the console, where /metrics is the scraper's only (N4); the figures are
 * the gauges' cached (5 s) readings, so calling it costs no more than a scrape.
 */
export const statusController = (deps: PaymentsDeps) =>
  new Elysia({ prefix: "/api/status", detail: { tags: ["Operator"] } })
    .use(bearerAuth(deps.verifyToken, operatorRealm))
    .get(
      "",
      async () => {
        const [backlog, dead] = await Promise.all([
          deps.metrics.reading("outbox_backlog"),
          deps.metrics.reading("outbox_dead"),
        ]);
        return { outbox_backlog: backlog, outbox_dead: dead };
      },
      {
        auth: "admin",
        response: { 200: paymentsStatus, ...problems(401, 403, 429, 503) },
        detail: {
          operationId: "getPaymentsStatus",
          summary: "Read the payments service's operating figures",
          description:
            `${whoMayCall} The outbox backlog and the rows set aside, as /metrics has them, ` +
            "read from the same 5-second cache; a figure that cannot be read is null.",
        },
      },
    );

import { bearerAuth } from "@commerce/shared/platform/auth/bearer-auth";
import { integer } from "@commerce/shared/platform/http/fields";
import { named, problems } from "@commerce/shared/platform/openapi";
import { Elysia, t } from "elysia";
import type { PaymentsDeps } from "../../deps";
import { operatorRealm, whoMayCall } from "../../lib/operator-realm";
import { refusedLastHour } from "../refusals/service";

const figure = (description: string) =>
  t.Nullable(integer({ minimum: 0, description: `${description}; null when it cannot be read` }));

/** U3: the payments service's figures for the console's health line (the readings of /metrics). */
export const paymentsStatus = named(
  "PaymentsStatus",
  t.Object({
    outbox_backlog: figure("Outbox rows (order-paid messages) not yet published to JetStream"),
    outbox_dead: figure("Outbox rows set aside: their publication cannot succeed"),
    refused_last_hour: figure(
      "Notifications the provider routes refused in the last hour, every replica's",
    ),
  }),
  {
    description: "The payments service's operating figures: what waits to go out",
    examples: [{ outbox_backlog: 0, outbox_dead: 0, refused_last_hour: 0 }],
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
        const [backlog, dead, refused] = await Promise.all([
          deps.metrics.reading("outbox_backlog"),
          deps.metrics.reading("outbox_dead"),
          refusedLastHour(deps.sql).catch(() => null),
        ]);
        return { outbox_backlog: backlog, outbox_dead: dead, refused_last_hour: refused };
      },
      {
        auth: "admin",
        response: { 200: paymentsStatus, ...problems(401, 403, 429, 503) },
        detail: {
          operationId: "getPaymentsStatus",
          summary: "Read the payments service's operating figures",
          description:
            `${whoMayCall} The outbox backlog and the rows set aside, as /metrics has them, ` +
            "read from the same 5-second cache, and the refusals of the last hour (" +
            "GET /api/notifications/rejected); a figure that cannot be read is null.",
        },
      },
    );

import { bearerAuth } from "@commerce/shared/platform/auth/bearer-auth";
import type { TokenVerifier } from "@commerce/shared/platform/auth/token-verifier";
import type { Sql } from "@commerce/shared/platform/database";
import { problems } from "@commerce/shared/platform/openapi";
import { Elysia } from "elysia";
import { operatorRealm, whoMayCall } from "../../lib/operator-realm";
import { refusalList, refusalQuery } from "./model";
import { listRefusals } from "./service";

/**
 * V4: "the provider says it sent it, but nothing arrived": what the provider routes refused in
 * the last 24 hours, read from what every replica wrote (RefusalTally). It names the two
 * dependencies it reads instead of `PaymentsDeps`, which holds the tally's type: one way only.
 */
export const refusalsController = (deps: { verifyToken: TokenVerifier | undefined; sql: Sql }) =>
  new Elysia({ prefix: "/api/notifications/rejected", detail: { tags: ["Operator"] } })
    .use(bearerAuth(deps.verifyToken, operatorRealm))
    .get(
      "",
      async ({ query }) => ({
        items: await listRefusals(deps.sql, {
          since: query.since === undefined ? undefined : new Date(query.since),
          orderId: query.order_id,
        }),
      }),
      {
        auth: "admin",
        query: refusalQuery,
        response: { 200: refusalList, ...problems(400, 401, 403, 429, 503) },
        detail: {
          operationId: "listRefusedNotifications",
          summary: "List the notifications the provider routes refused, by provider and reason",
          description:
            `${whoMayCall} Refusals (401, 400, 413, 415; not 429) since \`since\` (at most, and ` +
            "by default, 24 hours back), every replica's, grouped by provider and reason with a " +
            "count, the first and last time and the latest few examples (time, source address, " +
            "reason, the order the body claimed when it parsed); never a body or a signature. " +
            "Replicas write what they gathered every few seconds, so the newest refusals show " +
            "a moment later. With order_id, the refusals that named that order, kept for it " +
            "whatever else arrives: per provider and reason its true count and its first " +
            "and latest few examples.",
        },
      },
    );

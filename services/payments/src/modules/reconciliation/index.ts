import { bearerAuth } from "@commerce/shared/platform/auth/bearer-auth";
import { pageRequestOf } from "@commerce/shared/platform/http/paging";
import { problems } from "@commerce/shared/platform/openapi";
import { Elysia } from "elysia";
import type { PaymentsDeps } from "../../deps";
import { operatorRealm, whoMayCall } from "../../lib/operator-realm";
import { runsPage, runsQuery } from "./model";
import { listRuns } from "./service";

/** B3: the reconciliation runs, so an operator sees that the books are being compared. */
export const reconciliationController = (deps: PaymentsDeps) =>
  new Elysia({ prefix: "/api/reconciliation", detail: { tags: ["Operator"] } })
    .use(bearerAuth(deps.verifyToken, operatorRealm))
    .get(
      "/runs",
      ({ query }) =>
        listRuns(
          deps.sql,
          deps.topology.payments.stream,
          { kind: query.kind, provider: query.provider },
          pageRequestOf(query),
        ),
      {
        auth: "admin",
        query: runsQuery,
        response: { 200: runsPage, ...problems(400, 401, 403, 429, 503) },
        detail: {
          operationId: "listReconciliationRuns",
          summary: "List reconciliation runs, newest first",
          description:
            `${whoMayCall} Each run: its provider and kind (events: Stripe's event list; ` +
            "objects: Stripe's payments, refunds and disputes compared with what is stored; " +
            "report: Adyen's payment accounting report; inbox: what payments published against " +
            "what the api applied), the window it compared, when it started and ended, how many " +
            "it checked, found missing and repaired, and its errors (a run with errors was cut " +
            "short; the next one covers its window again). Optionally of one kind (events, " +
            "objects, report, inbox) or one provider (stripe, adyen). page and per_page as " +
            "every list; per_page=1&kind=events is the last events run.",
        },
      },
    );

import { bearerAuth } from "@commerce/shared/platform/auth/bearer-auth";
import { isoTimestamp, type Sql } from "@commerce/shared/platform/database";
import {
  offsetOf,
  type PageRequest,
  page,
  pageFromWindow,
  pageQuery,
  pageRequestOf,
} from "@commerce/shared/platform/http/paging";
import { named, problems } from "@commerce/shared/platform/openapi";
import { Elysia, t } from "elysia";
import type { PaymentsDeps } from "../../deps";
import { operatorRealm, whoMayCall } from "../../lib/operator-realm";

export const auditEntry = t.Object({
  at: t.String({ format: "date-time" }),
  actor: t.String({ description: "The admin token's sub" }),
  action: t.String({ examples: ["notification.replay"] }),
  target: t.String({ description: "What it acted on: for a replay, the notification's key" }),
  detail: t.Record(t.String(), t.Unknown(), {
    description: "For a replay: note (when given), message_id, subject",
  }),
});

export const auditPage = named("PaymentsAuditPage", page(auditEntry), {
  description: "What operators did on the payments service, newest first",
  examples: [
    {
      items: [
        {
          at: "2026-11-23T15:40:02.118Z",
          actor: "ops-anna",
          action: "notification.replay",
          target: "stripe:evt_3PqK9aLkdIwHu7ix0e5RtYb2",
          detail: {
            note: "api database restored from the 03:00 backup",
            message_id: "stripe:evt_3PqK9aLkdIwHu7ix0e5RtYb2:replay:88",
            subject: "payments.order.paid",
          },
        },
      ],
      page: 1,
      pages: 1,
      per_page: 20,
      total: 1,
    },
  ],
});

type AuditRow = typeof auditEntry.static & { total: number };

/** V5: a page of the audit log, newest first. */
export async function listAudit(sql: Sql, paging: PageRequest) {
  const rows = await sql<AuditRow[]>`
    select ${isoTimestamp(sql, "at")} as at, actor, action, target, detail,
      count(*) over ()::int as total
    from payments.audit_log order by audit_log.at desc, id desc
    limit ${paging.perPage} offset ${offsetOf(paging)}`;
  return pageFromWindow(
    rows,
    () => sql<{ total: number }[]>`select count(*)::int as total from payments.audit_log`,
    paging,
    ({ total: _total, ...entry }) => entry,
  );
}

/** V5: who did what on payments (notification replays), for the operator. */
export const auditController = (deps: PaymentsDeps) =>
  new Elysia({ prefix: "/api/audit", detail: { tags: ["Operator"] } })
    .use(bearerAuth(deps.verifyToken, operatorRealm))
    .get("", ({ query }) => listAudit(deps.sql, pageRequestOf(query)), {
      auth: "admin",
      query: t.Object(pageQuery),
      response: { 200: auditPage, ...problems(400, 401, 403, 429, 503) },
      detail: {
        operationId: "listPaymentsAudit",
        summary: "List what operators did on the payments service, newest first",
        description:
          `${whoMayCall} Every notification replay (action notification.replay) with the ` +
          "admin token's sub (actor), the notification's key (target) and the note given; page " +
          "and per_page as every list.",
      },
    });

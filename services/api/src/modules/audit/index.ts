import { pageRequestOf } from "@commerce/shared/platform/http/paging";
import { problems } from "@commerce/shared/platform/openapi";
import { Elysia } from "elysia";
import type { ApiDeps } from "../../deps";
import { auth } from "../auth";
import { auditPage, auditQuery } from "./model";
import { listAudit } from "./service";

/** V5: who did what that moved no order, for admins. */
export const auditController = ({ db, verifyToken }: ApiDeps) =>
  new Elysia({ prefix: "/api/audit", detail: { tags: ["Audit"] } })
    .use(auth(verifyToken))
    .get("", ({ query }) => listAudit(db, pageRequestOf(query)), {
      auth: "admin",
      query: auditQuery,
      response: { 200: auditPage, ...problems(400, 401, 403, 429, 503) },
      detail: {
        operationId: "listAudit",
        summary: "The audit log, newest first",
        description:
          "Every admin action that moves no order (webhook endpoint create, update, enable, " +
          "disable, rotate-secret, delete, test, replay-missing, recover, delivery retry) with " +
          "its actor (the token's sub), target and detail; never a secret. Order moves are on " +
          "the order's timeline instead. Admin token (scope admin).",
      },
    });

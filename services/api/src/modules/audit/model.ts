import { page, pageQuery } from "@commerce/shared/platform/http/paging";
import { named } from "@commerce/shared/platform/openapi";
import { t } from "elysia";

/** V5: the actions that move no order, each written to the audit log by whoever makes it. */
export const auditActions = [
  "webhook_endpoint.create",
  "webhook_endpoint.update",
  "webhook_endpoint.enable",
  "webhook_endpoint.disable",
  "webhook_endpoint.rotate_secret",
  "webhook_endpoint.delete",
  "webhook_endpoint.test",
  "webhook_endpoint.replay_missing",
  "webhook_endpoint.recover",
  "webhook_delivery.retry",
] as const;
export type AuditAction = (typeof auditActions)[number];

export const auditEntry = named(
  "AuditEntry",
  t.Object({
    at: t.String({ format: "date-time" }),
    actor: t.String({ description: "The admin's token `sub`" }),
    action: t.String({ description: auditActions.join(", ") }),
    target: t.String({ description: "What it was done to, e.g. webhook-endpoint/3" }),
    detail: t.Record(t.String(), t.Unknown(), {
      description: "What was asked and what came of it; never a secret",
    }),
  }),
  {
    examples: [
      {
        at: "2026-11-23T14:02:11.482Z",
        actor: "ops-anna",
        action: "webhook_endpoint.replay_missing",
        target: "webhook-endpoint/3",
        detail: { since: "2026-11-22T00:00:00.000Z", queued: 12 },
      },
    ],
  },
);

export const auditPage = named("AuditPage", page(auditEntry), {
  description: "A page of the audit log, newest first",
});
export const auditQuery = t.Object(pageQuery, { additionalProperties: true });

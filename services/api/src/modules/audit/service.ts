import { offsetOf, type PageRequest, pageFromWindow } from "@commerce/shared/platform/http/paging";
import type { Logger } from "@commerce/shared/platform/logger";
import { count, desc } from "drizzle-orm";
import type { Executor } from "../../db";
import { auditLog } from "../../db/schema";
import { windowTotal } from "../../lib/list-page";
import type { AuditAction } from "./model";

export type AuditRecord = {
  actor: string;
  action: AuditAction;
  target: string;
  detail?: Record<string, unknown>;
};

/**
 * V5: one action that moves no order, on the audit log and in one log line naming the actor.
 * Callers pass what was asked and what came of it, never a secret.
 */
export async function recordAction(db: Executor, logger: Logger, record: AuditRecord) {
  await db.insert(auditLog).values({ ...record, detail: record.detail ?? {} });
  logger.info("admin action", {
    actor: record.actor,
    action: record.action,
    target: record.target,
  });
}

/** V5: the audit log, newest first (P1 paging). */
export async function listAudit(db: Executor, paging: PageRequest) {
  const rows = await db
    .select({ entry: auditLog, total: windowTotal() })
    .from(auditLog)
    .orderBy(desc(auditLog.id))
    .limit(paging.perPage)
    .offset(offsetOf(paging));
  return pageFromWindow(
    rows,
    () => db.select({ total: count() }).from(auditLog),
    paging,
    ({ entry }) => ({
      at: entry.at.toISOString(),
      actor: entry.actor,
      action: entry.action,
      target: entry.target,
      detail: entry.detail as Record<string, unknown>,
    }),
  );
}

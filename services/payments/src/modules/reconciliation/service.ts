import { isoTimestamp, type Sql } from "@commerce/shared/platform/database";
import { offsetOf, type PageRequest, pageFromWindow } from "@commerce/shared/platform/http/paging";
import type { ReconciliationRun } from "./model";

type RunRow = ReconciliationRun & { total: number };

export type RunFilter = { kind?: string; provider?: string };

/**
 * B3: a page of this stack's reconciliation runs (its stream, `scope`), newest first, of one kind
 * or provider when asked (the console's last run of each kind is `per_page=1&kind=...`).
 */
export async function listRuns(
  sql: Sql,
  scope: string,
  paging: PageRequest,
  { kind, provider }: RunFilter = {},
) {
  const where = sql`scope = ${scope}
    ${kind === undefined ? sql`` : sql`and kind = ${kind}`}
    ${provider === undefined ? sql`` : sql`and provider = ${provider}`}`;
  const rows = await sql<RunRow[]>`
    select id::int as id, provider, kind,
      ${isoTimestamp(sql, "window_from")} as window_from,
      ${isoTimestamp(sql, "window_to")} as window_to,
      ${isoTimestamp(sql, "started_at")} as started_at,
      ${isoTimestamp(sql, "finished_at")} as finished_at,
      checked, found, applied, errors, count(*) over ()::int as total
    from payments.reconciliation_runs where ${where}
    order by started_at desc, id desc limit ${paging.perPage} offset ${offsetOf(paging)}`;
  return pageFromWindow(
    rows,
    () => sql<{ total: number }[]>`
      select count(*)::int as total from payments.reconciliation_runs where ${where}`,
    paging,
    ({ total: _total, ...run }) => run,
  );
}

import { isoTimestamp, type Sql } from "@commerce/shared/platform/database";
import { offsetOf, type PageRequest, pageFromWindow } from "@commerce/shared/platform/http/paging";
import type { ReconciliationRun } from "./model";

type RunRow = ReconciliationRun & { total: number };

/** B3: a page of this stack's reconciliation runs (its stream, `scope`), newest first. */
export async function listRuns(sql: Sql, scope: string, paging: PageRequest) {
  const rows = await sql<RunRow[]>`
    select id::int as id, provider, kind,
      ${isoTimestamp(sql, "window_from")} as window_from,
      ${isoTimestamp(sql, "window_to")} as window_to,
      ${isoTimestamp(sql, "started_at")} as started_at,
      ${isoTimestamp(sql, "finished_at")} as finished_at,
      checked, found, applied, errors, count(*) over ()::int as total
    from payments.reconciliation_runs where scope = ${scope}
    order by started_at desc, id desc limit ${paging.perPage} offset ${offsetOf(paging)}`;
  return pageFromWindow(
    rows,
    () => sql<{ total: number }[]>`
      select count(*)::int as total from payments.reconciliation_runs where scope = ${scope}`,
    paging,
    ({ total: _total, ...run }) => run,
  );
}

import { isoTimestamp, type Sql } from "@commerce/shared/platform/database";
import { offsetOf, type PageRequest, pageFromWindow } from "@commerce/shared/platform/http/paging";
import type { ReconciliationRun, RunKind } from "./model";

type RunRow = ReconciliationRun & { total: number };

export type RunFilter = { kind?: RunKind; provider?: string };

const whereOf = (sql: Sql, scope: string, { kind, provider }: RunFilter) => sql`
  where scope = ${scope}
    ${kind === undefined ? sql`` : sql`and kind = ${kind}`}
    ${provider === undefined ? sql`` : sql`and provider = ${provider}`}`;

/**
 * B3: a page of this stack's reconciliation runs (its stream, `scope`), newest first, of one kind
 * or provider if asked (the console's "last run of each kind" is `per_page=1&kind=`).
 */
export async function listRuns(sql: Sql, scope: string, filter: RunFilter, paging: PageRequest) {
  const rows = await sql<RunRow[]>`
    select id::int as id, provider, kind,
      ${isoTimestamp(sql, "window_from")} as window_from,
      ${isoTimestamp(sql, "window_to")} as window_to,
      ${isoTimestamp(sql, "started_at")} as started_at,
      ${isoTimestamp(sql, "finished_at")} as finished_at,
      checked, found, applied, errors, count(*) over ()::int as total
    from payments.reconciliation_runs ${whereOf(sql, scope, filter)}
    order by started_at desc, id desc limit ${paging.perPage} offset ${offsetOf(paging)}`;
  return pageFromWindow(
    rows,
    () => sql<{ total: number }[]>`
      select count(*)::int as total from payments.reconciliation_runs
      ${whereOf(sql, scope, filter)}`,
    paging,
    ({ total: _total, ...run }) => run,
  );
}

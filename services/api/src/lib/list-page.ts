import { and, eq, gt, lt, type SQL, sql } from "drizzle-orm";
import type { PgColumn, PgTable } from "drizzle-orm/pg-core";
import { listCounts } from "../db/schema";
import type { StatementBuilder } from "./prepared";

/**
 * A list that pages as P4 asks: `table`'s rows matching `where`, ordered by `id` (`order`), whose
 * total the triggers of migration 0006 keep in `list_counts` under `list` and the `key`
 * placeholder.
 */
export type ListShape = {
  table: PgTable;
  id: PgColumn;
  order: "asc" | "desc";
  list: string;
  where?: SQL;
};

/**
 * P4: the two statements of a list, each built by `read` as the list's total (a CTE of one row)
 * left-joined to its rows on `rowsOf`, so a page past the end still carries its total, and one
 * statement, so the total and the rows come from one snapshot. `page` finds the page's ids with
 * an index-only scan, from the far end of the list when the page lies in its back half, so the
 * last page costs what the first does; `after` (keyset) reads `limit + 1` ids after the cursor,
 * the extra one saying whether more follow. Placeholders: `key`, `limit`, `offset` or `after`,
 * and those of `where`.
 */
export function listStatements<Statement>(
  db: StatementBuilder,
  { table, id, order, list, where }: ListShape,
  read: (total: ListTotal, rowsOf: SQL) => Statement,
) {
  const limit = sql.placeholder("limit");
  const offset = sql.placeholder("offset");
  const after = sql.placeholder("after");
  const total = counted(db, list);
  const n = sql`(select n from total)`;
  const filter = where ? sql`${where} and` : sql``;
  const [forward, backward] = order === "asc" ? [sql`asc`, sql`desc`] : [sql`desc`, sql`asc`];
  const pageIds = sql`
    (select ${id} from ${table} where ${filter} 2 * ${offset}::bigint < ${n}
      order by ${id} ${forward} limit ${limit}::bigint offset ${offset}::bigint)
    union all
    (select ${id} from ${table} where ${filter} 2 * ${offset}::bigint >= ${n}
      order by ${id} ${backward}
      limit greatest(least(${limit}::bigint, ${n} - ${offset}::bigint), 0)
      offset greatest(${n} - ${offset}::bigint - ${limit}::bigint, 0))`;
  const afterIds = sql`
    select ${id} from ${table} where ${filter} ${order === "asc" ? gt(id, after) : lt(id, after)}
    order by ${id} ${forward} limit ${limit}::bigint + 1`;
  const rowsOf = (ids: SQL) => sql`${id} = any(array(${ids}))`;
  return { page: read(total, rowsOf(pageIds)), after: read(total, rowsOf(afterIds)) };
}

export type ListTotal = ReturnType<typeof counted>;

/**
 * The matching rows' count on each row of a page (`count(*) over ()`), for the short operator
 * lists: their page and total come from one statement, so one snapshot, without P4's counters.
 * `pageFromWindow` turns such rows into the page.
 */
export const windowTotal = () => sql<number>`count(*) over ()`.mapWith(Number);

/** The list's total, from its counter rows, as the `total` CTE the statements refer to. */
const counted = (db: StatementBuilder, list: string) =>
  db.$with("total").as(
    db
      .select({ n: sql<number>`coalesce(sum(${listCounts.n}), 0)::bigint`.mapWith(Number).as("n") })
      .from(listCounts)
      .where(and(eq(listCounts.list, list), eq(listCounts.key, sql.placeholder("key")))),
  );

/** P1, P4: the envelope of a page read by `listStatements`. */
export function listPage<Item>(
  rows: { total: number; row: Item | null }[],
  { page, perPage, after }: { page: number; perPage: number; after?: number },
  idOf: (item: Item) => number,
) {
  const total = rows[0]?.total ?? 0;
  const items = rows.flatMap(({ row }) => (row === null ? [] : [row])).slice(0, perPage);
  const last = items.at(-1);
  const more =
    after === undefined ? (page - 1) * perPage + items.length < total : rows.length > perPage;
  return {
    items,
    page,
    pages: Math.ceil(total / perPage),
    per_page: perPage,
    total,
    next_after: more && last !== undefined ? idOf(last) : null,
  };
}

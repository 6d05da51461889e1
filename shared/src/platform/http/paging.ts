import { t } from "elysia";
import { integer, urlInt } from "./fields";

export const maxPage = 1_000_000;
export const maxPerPage = 100;

/** `page` and `per_page` as P1 defines them; every paginated list of both services takes them. */
export const pageQuery = {
  page: t.Optional(urlInt("query", "page", 1, maxPage, { default: 1 })),
  per_page: t.Optional(urlInt("query", "per_page", 1, maxPerPage, { default: 20 })),
};

const pageFields = <T extends Parameters<typeof t.Array>[0]>(item: T) => ({
  items: t.Array(item),
  page: integer(),
  pages: integer(),
  per_page: integer(),
  total: integer(),
});

/** The list envelope (P1) around items of one schema. */
export const page = <T extends Parameters<typeof t.Array>[0]>(item: T) =>
  t.Object(pageFields(item));

/**
 * The envelope of a list that also pages by keyset (P4): `next_after`, the `after` of the
 * following page, or null at the end.
 */
export const keysetPage = <T extends Parameters<typeof t.Array>[0]>(item: T) =>
  t.Object({
    ...pageFields(item),
    next_after: t.Nullable(
      integer({ description: "Pass as `after` for the following page; null at the end" }),
    ),
  });

/** `after` (P4): a page starts after the item of this id, in the list's order. */
export type PageRequest = { page: number; perPage: number; after?: number };

export const pageRequestOf = (query: {
  page?: number;
  per_page?: number;
  after?: number;
}): PageRequest => ({
  page: query.page ?? 1,
  perPage: query.per_page ?? 20,
  ...(query.after === undefined ? {} : { after: query.after }),
});

export const offsetOf = ({ page, perPage }: PageRequest) => (page - 1) * perPage;

export function pageOf<T>(items: T[], total: number, { page, perPage }: PageRequest) {
  return { items, page, pages: Math.ceil(total / perPage), per_page: perPage, total };
}

/**
 * A page read with `count(*) over ()`: its rows carry the total, from the page's own snapshot.
 * An empty first page means nothing matched then: total 0. An empty later page is past the end
 * and has no rows to carry it, so `countAll` is asked instead (a second statement, so a total
 * of a moment later).
 */
export async function pageFromWindow<Row extends { total: number }, Item>(
  rows: Row[],
  countAll: () => Promise<{ total: number }[]>,
  paging: PageRequest,
  toItem: (row: Row) => Item,
) {
  const total = rows[0]?.total ?? (paging.page === 1 ? 0 : (await countAll())[0].total);
  return pageOf(rows.map(toItem), total, paging);
}

import { bodyInt, urlInt } from "./fields";

/** Product ids are PostgreSQL `serial`s; order ids are `bigint` identities. */
export const maxProductId = 2147483647;

export const productIdParam = (name: string) => urlInt("path", name, 1, maxProductId);
export const productIdField = bodyInt(1, maxProductId);
export const orderIdParam = urlInt("path", "order_id", 1, Number.MAX_SAFE_INTEGER);

/** P4: `after`, the id a keyset page starts after. */
const after = {
  description:
    "Keyset paging: the page of items that follow this id in the list's order (`page` is then " +
    "ignored). Pass the previous page's `next_after`.",
};
export const productAfter = urlInt("query", "after", 1, maxProductId, after);
export const orderAfter = urlInt("query", "after", 1, Number.MAX_SAFE_INTEGER, after);

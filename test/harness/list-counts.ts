import type { Sql } from "@commerce/shared/platform/database";

/**
 * P4: every list whose counter rows (summed over slots) differ from a count of its rows, both
 * read in one statement, so one snapshot. The counts are written out here, not taken from the
 * migration's key functions, so a wrong key in a trigger shows up.
 */
export async function listCountMismatches(sql: Sql) {
  return [
    ...(await sql`
      with counted as (
        select 'products' as list, '' as key, count(*) as n from api.products
        union all
        select 'products/category', category, count(*) from api.products group by category
        union all
        select 'orders', '', count(*) from api.orders
        union all
        select 'orders/status', status, count(*) from api.orders group by status
        union all
        select 'orders/customer', customer_id, count(*) from api.orders group by customer_id
        union all
        select 'orders/customer+status', status || ' ' || customer_id, count(*) from api.orders
        group by status, customer_id
      ), kept as (
        select list, key, sum(n) as n from api.list_counts group by list, key
      )
      select list, key, c.n::int as counted, k.n::int as kept
      from counted c full join kept k using (list, key)
      where coalesce(c.n, 0) <> coalesce(k.n, 0)`),
  ];
}

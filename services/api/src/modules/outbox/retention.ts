import type { Sql } from "@commerce/shared/platform/database";

/**
 * H3: published order events older than `days` leave the outbox, a bounded batch per statement
 * so no sweep holds locks long; rows not yet published (or set aside, N10) are never touched.
 * Younger ones stay: replay-missing reads them back. Returns how many went.
 */
export async function deleteOldOutboxRows(sql: Sql, days: number, batch = 10_000) {
  let deleted = 0;
  for (;;) {
    const gone = await sql`
      delete from api.outbox where id in (
        select id from api.outbox
        where published_at is not null
          and created_at < now() - make_interval(days => ${days}::int)
        limit ${batch}::int)`;
    deleted += gone.count;
    if (gone.count < batch) return deleted;
  }
}

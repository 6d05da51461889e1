import { sql } from "drizzle-orm";

/**
 * U7: "failing now", decided here only. The endpoint `e` (api.webhook_endpoints) is enabled, and
 * its last attempt failed (`failing_since`: a failing streak, H3) or a delivery of it has been
 * pending over 5 minutes. The health line counts these endpoints (`failing_endpoints`, the gauge
 * `webhook_endpoints_failing_now`); each endpoint's JSON says it as `failing_now`.
 */
export const failingNowRule = `e.status = 'enabled' and (e.failing_since is not null
  or exists (select from api.webhook_deliveries d where d.endpoint_id = e.id
    and d.status = 'pending' and d.created_at < now() - interval '5 minutes'))`;

/**
 * The rule for the api.webhook_endpoints row a drizzle query selects: `failing_now`. The outer
 * row is named in full: drizzle writes a lone table's columns unqualified (`"id"`), which inside
 * the subquery would be `e`'s own.
 */
export const failingNow = sql<boolean>`(select ${sql.raw(failingNowRule)}
  from api.webhook_endpoints e where e.id = api.webhook_endpoints.id)`;

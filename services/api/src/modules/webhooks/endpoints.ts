import { NotFoundError, ValidationError } from "@commerce/shared/platform/errors";
import { offsetOf, type PageRequest, pageFromWindow } from "@commerce/shared/platform/http/paging";
import { count, desc, eq, sql } from "drizzle-orm";
import type { Database } from "../../db";
import { webhookEndpoints } from "../../db/schema";
import { windowTotal } from "../../lib/list-page";
import { type AddressPolicy, urlRefusal } from "./address-guard";
import { failingNow } from "./failing-now";
import type { EndpointChange, NewEndpoint, WebhookEndpoint } from "./model";
import { newSecret } from "./signature";

type EndpointRow = typeof webhookEndpoints.$inferSelect;

/** The endpoint as admins see it: never its secret (H7); `failingNow` by `failingNow` (U7). */
const toEndpoint = (row: EndpointRow, failingNow: boolean): WebhookEndpoint => ({
  id: row.id,
  url: row.url,
  events: row.events,
  description: row.description,
  status: row.status,
  disabled_reason: row.disabledReason,
  disabled_at: row.disabledAt?.toISOString() ?? null,
  disabled_by: row.disabledBy,
  failing_since: row.failingSince?.toISOString() ?? null,
  failing_now: failingNow,
  created_at: row.createdAt.toISOString(),
});

/** H7, N18: the URL as it will be stored and delivered to (normalized), or a 400. */
async function checkUrl(url: string, policy: AddressPolicy): Promise<string> {
  const refusal = await urlRefusal(url, policy);
  if (refusal)
    throw new ValidationError("The request body is invalid", [{ path: "/url", message: refusal }]);
  return new URL(url).href;
}

/**
 * H3 (v5): since when the endpoint subscribes to each of `events`, in the database's time (the
 * outbox's `created_at` is too): the time it had for an event it kept, now for one it adds.
 */
const eventsSinceOf = (events: string[]) => sql`(
  select coalesce(jsonb_object_agg(ev, coalesce(${webhookEndpoints.eventsSince} -> ev, to_jsonb(now()))), '{}'::jsonb)
  from unnest(string_to_array(${events.join(",")}, ',')) ev)`;

/** H1: a new endpoint, enabled, with a new secret: the only answer that shows it. */
export async function createEndpoint(db: Database, body: NewEndpoint, policy: AddressPolicy) {
  const url = await checkUrl(body.url, policy);
  const [row] = await db
    .insert(webhookEndpoints)
    .values({
      url,
      events: body.events,
      eventsSince: sql`(select coalesce(jsonb_object_agg(ev, now()), '{}'::jsonb)
        from unnest(string_to_array(${body.events.join(",")}, ',')) ev)`,
      description: body.description ?? null,
      secret: newSecret(),
    })
    .returning();
  // A new endpoint has had no attempt and has no delivery: not failing.
  return { ...toEndpoint(row, false), secret: row.secret };
}

export async function listEndpoints(db: Database, paging: PageRequest) {
  const rows = await db
    .select({ endpoint: webhookEndpoints, failingNow, total: windowTotal() })
    .from(webhookEndpoints)
    .orderBy(desc(webhookEndpoints.id))
    .limit(paging.perPage)
    .offset(offsetOf(paging));
  return pageFromWindow(
    rows,
    () => db.select({ total: count() }).from(webhookEndpoints),
    paging,
    ({ endpoint, failingNow }) => toEndpoint(endpoint, failingNow),
  );
}

export async function getEndpoint(db: Database, id: number): Promise<WebhookEndpoint> {
  const [row] = await db
    .select({ endpoint: webhookEndpoints, failingNow })
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.id, id));
  if (!row) throw new NotFoundError(`Webhook endpoint ${id} does not exist`);
  return toEndpoint(row.endpoint, row.failingNow);
}

/**
 * H1, H3: changes what was sent. Enabling clears the reason and the failing streak, so the
 * endpoint's pending deliveries resume; disabling by hand records `manual`, and (H3 v5) when and
 * by whom (`actor`), kept after it is enabled again for replay-missing's `since`. An endpoint
 * already disabled keeps the moment it was disabled. An event type added to `events` is
 * subscribed from now on.
 */
export async function updateEndpoint(
  db: Database,
  id: number,
  change: EndpointChange,
  policy: AddressPolicy,
  actor: string,
): Promise<WebhookEndpoint> {
  const url = change.url === undefined ? undefined : await checkUrl(change.url, policy);
  const wasEnabled = sql`${webhookEndpoints.status} = 'enabled'`;
  const status =
    change.status === "enabled"
      ? { status: "enabled" as const, disabledReason: null, failingSince: null }
      : change.status === "disabled"
        ? {
            status: "disabled" as const,
            disabledReason: sql`case when ${wasEnabled} then 'manual'
              else ${webhookEndpoints.disabledReason} end`,
            disabledAt: sql`case when ${wasEnabled} then now()
              else ${webhookEndpoints.disabledAt} end`,
            disabledBy: sql`case when ${wasEnabled} then ${actor}::text
              else ${webhookEndpoints.disabledBy} end`,
          }
        : {};
  const [row] = await db
    .update(webhookEndpoints)
    .set({
      ...(url !== undefined ? { url } : {}),
      ...(change.events !== undefined
        ? { events: change.events, eventsSince: eventsSinceOf(change.events) }
        : {}),
      ...(change.description !== undefined ? { description: change.description } : {}),
      ...status,
      createdAt: sql`${webhookEndpoints.createdAt}`,
    })
    .where(eq(webhookEndpoints.id, id))
    .returning({ id: webhookEndpoints.id });
  if (!row) throw new NotFoundError(`Webhook endpoint ${id} does not exist`);
  // Read again: the change (enabling clears the failing streak) decides `failing_now`.
  return getEndpoint(db, id);
}

/** H1: the endpoint and its delivery log go. */
export async function deleteEndpoint(db: Database, id: number): Promise<void> {
  const deleted = await db
    .delete(webhookEndpoints)
    .where(eq(webhookEndpoints.id, id))
    .returning({ id: webhookEndpoints.id });
  if (deleted.length === 0) throw new NotFoundError(`Webhook endpoint ${id} does not exist`);
}

/** H1: a new secret; the old one signs beside it for 24 hours, so receivers can switch. */
export async function rotateSecret(db: Database, id: number): Promise<{ secret: string }> {
  const [row] = await db
    .update(webhookEndpoints)
    .set({
      previousSecret: sql`${webhookEndpoints.secret}`,
      previousSecretUntil: sql`now() + interval '24 hours'`,
      secret: newSecret(),
    })
    .where(eq(webhookEndpoints.id, id))
    .returning({ secret: webhookEndpoints.secret });
  if (!row) throw new NotFoundError(`Webhook endpoint ${id} does not exist`);
  return { secret: row.secret };
}

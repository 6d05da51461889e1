import { NotFoundError } from "@commerce/shared/platform/errors";
import { offsetOf, type PageRequest, pageFromWindow } from "@commerce/shared/platform/http/paging";
import { and, asc, count, desc, eq } from "drizzle-orm";
import type { Database } from "../../db";
import {
  type DeliveryStatus,
  orders,
  webhookAttempts,
  webhookDeliveries,
  webhookEndpoints,
} from "../../db/schema";
import { windowTotal } from "../../lib/list-page";
import type { Delivery, DeliveryWithAttempts } from "./model";

type DeliveryRow = typeof webhookDeliveries.$inferSelect;

const toDelivery = (row: DeliveryRow): Delivery => ({
  id: row.id,
  event_type: row.eventType,
  message_id: row.messageId,
  order_id: row.orderId,
  status: row.status,
  attempts: row.attempts + row.manualAttempts,
  next_attempt_at: row.status === "pending" ? row.nextAttemptAt.toISOString() : null,
  last_status_code: row.lastStatusCode,
  created_at: row.createdAt.toISOString(),
});

/** H4: one endpoint's deliveries, newest first, optionally of one status or one order. */
export async function listDeliveries(
  db: Database,
  endpointId: number,
  paging: PageRequest,
  filter: { status?: DeliveryStatus; orderId?: number } = {},
) {
  await endpointExists(db, endpointId);
  const where = and(
    eq(webhookDeliveries.endpointId, endpointId),
    filter.status ? eq(webhookDeliveries.status, filter.status) : undefined,
    filter.orderId ? eq(webhookDeliveries.orderId, filter.orderId) : undefined,
  );
  const rows = await db
    .select({ delivery: webhookDeliveries, total: windowTotal() })
    .from(webhookDeliveries)
    .where(where)
    .orderBy(desc(webhookDeliveries.id))
    .limit(paging.perPage)
    .offset(offsetOf(paging));
  return pageFromWindow(
    rows,
    () => db.select({ total: count() }).from(webhookDeliveries).where(where),
    paging,
    ({ delivery }) => toDelivery(delivery),
  );
}

/** H4: one delivery with every attempt, oldest first. */
export async function getDelivery(
  db: Database,
  endpointId: number,
  deliveryId: number,
): Promise<DeliveryWithAttempts> {
  const [row] = await db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.endpointId, endpointId)));
  if (!row)
    throw new NotFoundError(`Delivery ${deliveryId} of endpoint ${endpointId} does not exist`);
  const attempts = await db
    .select()
    .from(webhookAttempts)
    .where(eq(webhookAttempts.deliveryId, deliveryId))
    .orderBy(asc(webhookAttempts.id));
  return {
    ...toDelivery(row),
    attempts_log: attempts.map((a) => ({
      at: a.at.toISOString(),
      status_code: a.statusCode,
      duration_ms: a.durationMs,
      error: a.error,
      response_body: a.responseBody,
    })),
  };
}

/**
 * U7: "did the warehouse hear of order N?": every delivery of the order's events, to every
 * endpoint, oldest first, with the endpoint's description and url; 404 for an unknown order.
 */
export async function listOrderDeliveries(db: Database, orderId: number) {
  const [order] = await db.select({ id: orders.id }).from(orders).where(eq(orders.id, orderId));
  if (!order) throw new NotFoundError(`Order ${orderId} does not exist`);
  const rows = await db
    .select({
      delivery: webhookDeliveries,
      description: webhookEndpoints.description,
      url: webhookEndpoints.url,
    })
    .from(webhookDeliveries)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
    .where(eq(webhookDeliveries.orderId, orderId))
    .orderBy(asc(webhookDeliveries.id))
    .limit(1000);
  return {
    items: rows.map(({ delivery, description, url }) => {
      const { order_id: _, ...shown } = toDelivery(delivery);
      return {
        ...shown,
        endpoint_id: delivery.endpointId,
        endpoint_description: description,
        endpoint_url: url,
      };
    }),
  };
}

/** H4: a `webhook.test` event for one endpoint, delivered like any other (its own message id). */
export async function sendTestEvent(db: Database, endpointId: number) {
  await endpointExists(db, endpointId);
  const [row] = await db
    .insert(webhookDeliveries)
    .values({
      endpointId,
      eventType: "webhook.test",
      messageId: `test-${crypto.randomUUID()}`,
      orderId: null,
      payload: { endpoint_id: endpointId },
    })
    .returning();
  return toDelivery(row);
}

async function endpointExists(db: Database, endpointId: number) {
  const [endpoint] = await db
    .select({ id: webhookEndpoints.id })
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.id, endpointId));
  if (!endpoint) throw new NotFoundError(`Webhook endpoint ${endpointId} does not exist`);
}

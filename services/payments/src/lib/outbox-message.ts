import { type MessageTopology, paymentEvents } from "@commerce/shared/contract/messages";
import { isoTimestamp, type Sql } from "@commerce/shared/platform/database";
import type { ParsedNotification } from "../modules/providers/provider";

/** M1: the subject of the message a notification event makes, if it makes one. */
export const messageSubjectOf = (event: string, topology: MessageTopology) =>
  Object.hasOwn(paymentEvents, event)
    ? topology.payments[paymentEvents[event as keyof typeof paymentEvents]]
    : undefined;

/**
 * G2: a message only for an event that moves money and names an order, amount and currency;
 * L5: a dispute names the payment (the api finds its order); G4: none for money not the shop's.
 * Undefined when the notification makes no message.
 */
export const notificationSubject = (
  { message, orderId, paymentRef, amount, currency, ignored }: ParsedNotification,
  topology: MessageTopology,
) =>
  message !== undefined &&
  ignored === undefined &&
  (message === "payment.disputed" ? paymentRef !== null : orderId !== null) &&
  amount !== null &&
  currency !== null
    ? messageSubjectOf(message, topology)
    : undefined;

/**
 * M1, L5: a notification's message payload, built in SQL from a row with the notification's
 * columns (`key`, `order_id`, `amount`, `currency`, `received_at`, `provider`, `payment_ref`,
 * `stage`, `source`): the webhook's outbox row and every replay of it (V3) carry the same bytes.
 * Its `notification_id` is the key (G5), so no two providers' notifications share one; a dispute
 * that names no order leaves `order_id` out, only a dispute has a `stage`, and only what a
 * reconciliation run found has a `source` (B3).
 */
export const messagePayload = (sql: Sql) => sql`pg_catalog.jsonb_strip_nulls(
  pg_catalog.jsonb_build_object(
  'notification_id', key, 'order_id', order_id, 'amount', amount, 'currency', currency,
  'received_at', ${isoTimestamp(sql, "received_at")},
  'provider', provider, 'payment_ref', coalesce(payment_ref, key), 'stage', stage,
  'source', nullif(source, 'webhook')))`;

import { notificationSources, paymentProviders } from "@commerce/shared/contract/messages";
import { choice, integer, text, urlInt } from "@commerce/shared/platform/http/fields";
import { page, pageQuery } from "@commerce/shared/platform/http/paging";
import { named } from "@commerce/shared/platform/openapi";
import { t } from "elysia";

const timestamp = (description: string) => t.String({ format: "date-time", description });
const nullableTimestamp = (description: string) =>
  t.Nullable(t.String({ format: "date-time", description }));

const summaryFields = {
  id: t.String({
    description: "The notification id: the provider's id, else a hash of its fields",
  }),
  key: t.String({
    description:
      "The provider and its id as one text (stripe:evt_..., adyen:..., a generic id as it is): the message's notification_id and Nats-Msg-Id, the api's timeline notification_id",
  }),
  provider: t.String({
    description: "Who sent it: generic, stripe or adyen",
    examples: ["stripe"],
  }),
  event: t.String({
    description: "The provider's event kind, as sent",
    examples: ["payment.succeeded"],
  }),
  order_id: t.Nullable(integer({ description: "null when the notification names no order" })),
  payment_ref: t.String({
    description:
      "The provider's id of the payment it is about (Stripe's PaymentIntent, Adyen's pspReference); the notification id for generic",
  }),
  amount: t.Nullable(
    integer({ description: "In minor units of currency; null when it carries none" }),
  ),
  currency: t.Nullable(t.String({ examples: ["USD"] })),
  received_at: timestamp("When the webhook stored it"),
  source_ip: t.String({ description: "The client address the webhook saw" }),
  published_at: nullableTimestamp(
    "When its message was published to JetStream; null while it waits, or when its event makes none",
  ),
  trace_id: t.Nullable(t.String({ description: "The trace it arrived in; null when not kept" })),
  ignored: t.Nullable(
    t.String({
      description:
        "Why an event that moves money made no message (another mode's money, another merchant account); null otherwise",
    }),
  ),
  source: choice(notificationSources, {
    description:
      "How it reached payments: webhook (the provider sent it) or reconciliation (a run found it at the provider: its webhook never came)",
  }),
};

/** A stored notification as the operator's list shows it. */
export const notificationSummary = t.Object(summaryFields);

const messageRow = {
  subject: t.String(),
  message_id: t.String({ description: "Its Nats-Msg-Id" }),
  published_at: nullableTimestamp("When JetStream acked it; null while it waits in the outbox"),
};

/** One notification with its body as received and what became of its message. */
export const notificationDetail = t.Object({
  ...summaryFields,
  raw_body: t.String({ description: "The request body exactly as received" }),
  message: t.Nullable(
    t.Object(messageRow, { description: "The message the webhook queued; null if none" }),
  ),
  replays: t.Array(
    t.Object({ ...messageRow, requested_at: timestamp("When an operator asked for it") }),
    { description: "Each replay of its message, oldest first" },
  ),
});

export const notificationPage = page(notificationSummary);

export const notificationQuery = t.Object({
  ...pageQuery,
  order_id: t.Optional(urlInt("query", "order_id", 1, Number.MAX_SAFE_INTEGER)),
  event: t.Optional(text(1, 100, undefined, { name: "event" })),
  provider: t.Optional(
    choice(paymentProviders, {
      error: {
        path: "/provider",
        message: `provider must be one of ${paymentProviders.join(", ")}`,
      },
    }),
  ),
  source: t.Optional(
    choice(notificationSources, {
      error: {
        path: "/source",
        message: `source must be one of ${notificationSources.join(", ")}`,
      },
    }),
  ),
});

export const notificationIdParams = t.Object({ id: text(1, 255, undefined, { name: "id" }) });

export const replayQueued = t.Object({
  notification_id: t.String(),
  subject: t.String({ description: "Where the message goes" }),
  message_id: t.String({
    description:
      "The replay's own Nats-Msg-Id, so JetStream does not drop it as a repeat; the payload " +
      "keeps the notification id, by which the consumer recognises a message it applied",
  }),
  requested_at: timestamp("When the replay was queued"),
});

const notificationExample = {
  id: "evt_3PqK9aLkdIwHu7ix0e5RtYb2",
  key: "evt_3PqK9aLkdIwHu7ix0e5RtYb2",
  provider: "generic",
  event: "payment.succeeded",
  order_id: 1021,
  payment_ref: "evt_3PqK9aLkdIwHu7ix0e5RtYb2",
  amount: 75000,
  currency: "USD",
  received_at: "2026-11-23T14:02:11.482Z",
  source_ip: "198.51.100.7",
  published_at: "2026-11-23T14:02:11.497Z",
  trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
  ignored: null,
  source: "webhook" as const,
};

// D5: the document's named components.
named("Notification", notificationSummary, {
  description: "A stored payment notification",
  examples: [notificationExample],
});
named("NotificationDetail", notificationDetail, {
  description: "A stored payment notification with its raw body and what became of its message",
  examples: [
    {
      ...notificationExample,
      raw_body:
        '{"event":"payment.succeeded","order_id":1021,"amount":75000,"currency":"USD","id":"evt_3PqK9aLkdIwHu7ix0e5RtYb2"}',
      message: {
        subject: "payments.order.paid",
        message_id: "evt_3PqK9aLkdIwHu7ix0e5RtYb2",
        published_at: "2026-11-23T14:02:11.497Z",
      },
      replays: [],
    },
  ],
});
named("NotificationPage", notificationPage, {
  description: "A page of stored payment notifications",
  examples: [{ items: [notificationExample], page: 1, pages: 1, per_page: 20, total: 1 }],
});
named("Replay", replayQueued, {
  examples: [
    {
      notification_id: "evt_3PqK9aLkdIwHu7ix0e5RtYb2",
      subject: "payments.order.paid",
      message_id: "evt_3PqK9aLkdIwHu7ix0e5RtYb2:replay:1",
      requested_at: "2026-11-23T15:40:02.118Z",
    },
  ],
});

export type NotificationSummary = typeof notificationSummary.static;
export type NotificationDetail = typeof notificationDetail.static;
export type ReplayQueued = typeof replayQueued.static;

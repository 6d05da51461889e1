import { integer, urlInt } from "@commerce/shared/http/fields";
import { page, pageQuery } from "@commerce/shared/http/paging";
import { t } from "elysia";

const timestamp = (description: string) => t.String({ format: "date-time", description });
const nullableTimestamp = (description: string) =>
  t.Nullable(t.String({ format: "date-time", description }));

const summaryFields = {
  id: t.String({
    description: "The notification id: the provider's id, else a hash of its fields",
  }),
  event: t.String({ examples: ["payment.succeeded"] }),
  order_id: integer(),
  amount: integer({ description: "In minor units of currency" }),
  currency: t.String({ examples: ["USD"] }),
  received_at: timestamp("When the webhook stored it"),
  source_ip: t.String({ description: "The client address the webhook saw" }),
  published_at: nullableTimestamp(
    "When its message was published to JetStream; null while it waits, or when its event makes none",
  ),
  trace_id: t.Nullable(t.String({ description: "The trace it arrived in; null when not kept" })),
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
  event: t.Optional(
    t.String({
      minLength: 1,
      maxLength: 100,
      error: { path: "/event", message: "event must be a string of 1 to 100 characters" },
    }),
  ),
});

export const notificationIdParams = t.Object({
  id: t.String({
    minLength: 1,
    maxLength: 255,
    error: { path: "/id", message: "id (path) must be a string of 1 to 255 characters" },
  }),
});

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

export type NotificationSummary = typeof notificationSummary.static;
export type NotificationDetail = typeof notificationDetail.static;
export type ReplayQueued = typeof replayQueued.static;

import { orderEventNames } from "@commerce/shared/contract/messages";
import { page, pageQuery } from "@commerce/shared/platform/http/paging";
import { named } from "@commerce/shared/platform/openapi";
import { t } from "elysia";
import { deliveryStatuses, disabledReasons, endpointStatuses } from "../../db/schema";
import { choice, integer, text, urlInt } from "../../lib/fields";

/** The names an endpoint may subscribe to: every M3 event, or `*` for all of them. */
export const subscribableEvents = ["*", ...orderEventNames.map((name) => `orders.${name}`)];

// N9, N18: one-line text; tabs and line breaks are refused (by the guard too), not dropped.
const url = text(
  1,
  2000,
  "Where deliveries are POSTed: https (http only where the api allows it)",
  {
    name: "url",
  },
);
const events = t.Array(choice(subscribableEvents as [string, ...string[]]), {
  minItems: 1,
  maxItems: subscribableEvents.length,
  uniqueItems: true,
  description: 'Event names (`orders.paid`, ...) or `["*"]` for every order event',
});
const description = text(0, 500, "What the endpoint is for, for whoever reads the list");

export const webhookEndpoint = t.Object(
  {
    id: integer(),
    url: t.String(),
    events: t.Array(t.String()),
    description: t.Nullable(t.String()),
    status: t.UnionEnum(endpointStatuses),
    disabled_reason: t.Nullable(t.UnionEnum(disabledReasons)),
    disabled_at: t.Nullable(
      t.String({
        format: "date-time",
        description:
          "When it was last disabled (kept after it is enabled again): the `since` for replay-missing. Null if never, or disabled before this was recorded",
      }),
    ),
    disabled_by: t.Nullable(
      t.String({
        description:
          "Who last disabled it: the admin's token `sub`; null when the api did (disabled_reason gone or failing) or never",
      }),
    ),
    failing_since: t.Nullable(
      t.String({
        format: "date-time",
        description: "The first failed attempt since the last success; null while attempts succeed",
      }),
    ),
    failing_now: t.Boolean({
      description:
        "Enabled, and its last attempt failed (failing_since is set) or a delivery of it has been pending over 5 minutes: the endpoints GET /api/status counts as failing_endpoints",
    }),
    created_at: t.String({ format: "date-time" }),
  },
  {},
);

export const createdWebhookEndpoint = t.Composite([
  webhookEndpoint,
  t.Object({
    secret: t.String({
      description: "`whsec_` and base64: shown in this answer only; keep it to verify deliveries",
    }),
  }),
]);

/** V5: why an admin changed an endpoint or replayed its deliveries; kept on the audit log. */
const actionNote = text(
  1,
  1000,
  "Why (optional): kept with your name on the audit log (GET /api/audit)",
  { multiline: true, name: "note" },
);

export const newEndpoint = t.Object(
  { url, events, description: t.Optional(description) },
  { additionalProperties: false },
);

export const endpointChange = t.Object(
  {
    url: t.Optional(url),
    events: t.Optional(events),
    description: t.Optional(t.Nullable(description)),
    status: t.Optional(
      choice(endpointStatuses, {
        description:
          "disabled: no delivery is made for an event that happens while it is disabled (replay-missing makes them later); enabled resumes its pending deliveries",
      }),
    ),
    note: t.Optional(actionNote),
  },
  {
    additionalProperties: false,
    // E6: a note explains a change, so it needs a field beside it (400 alone); said here for
    // clients, checked by the route.
    dependentSchemas: { note: { minProperties: 2 } },
    examples: [
      {
        status: "disabled",
        note: "Warehouse system down for maintenance until 14:00, ticket 5120",
      },
    ],
  },
);

/** H3: what disabling means, said in the PATCH's answer, the docs and the console alike. */
export const disabledNotice =
  "Disabled: no delivery is made for an event that happens while the endpoint is disabled, and " +
  "its pending deliveries wait. After enabling it, POST .../replay-missing with the time it was " +
  "disabled to deliver the events it missed.";

export const changedWebhookEndpoint = t.Composite([
  webhookEndpoint,
  t.Object({
    notice: t.Optional(
      t.String({ description: "Said when the endpoint is disabled: what it will miss" }),
    ),
  }),
]);

export const recoverySince = t.Object(
  {
    since: t.String({
      format: "date-time",
      // E6: JSON Schema bounds no time relative to now, so the limit is said in words.
      description:
        "An RFC 3339 date-time at most 30 days before the request (the api keeps order events 30 days); an older one is 400",
    }),
    note: t.Optional(actionNote),
  },
  {
    additionalProperties: false,
    examples: [
      { since: "2026-11-22T08:00:00Z" },
      { since: "2026-11-22T08:00:00Z", note: "The warehouse was disabled during its outage" },
    ],
  },
);

export const queuedDeliveries = t.Object({
  queued: integer({ description: "Deliveries made due by this call; 0 when called again" }),
});

export const rotatedSecret = t.Object({
  secret: t.String({
    description: "The new secret; the old one keeps signing beside it for 24 hours",
  }),
});

export const delivery = t.Object(
  {
    id: integer(),
    event_type: t.String({ description: "orders.paid, ..., or webhook.test" }),
    message_id: t.String({ description: "The webhook-id header of every attempt" }),
    order_id: t.Nullable(integer()),
    status: t.UnionEnum(deliveryStatuses),
    attempts: integer({ description: "Attempts made: the schedule's and any admin's retries" }),
    next_attempt_at: t.Nullable(t.String({ format: "date-time" })),
    last_status_code: t.Nullable(integer()),
    created_at: t.String({ format: "date-time" }),
  },
  {},
);

export const attempt = t.Object({
  at: t.String({ format: "date-time" }),
  status_code: t.Nullable(integer()),
  duration_ms: integer(),
  error: t.Nullable(t.String({ description: "timeout, connection_refused, blocked_address, ..." })),
  response_body: t.Nullable(t.String({ description: "The first KiB of the answer" })),
});

export const deliveryWithAttempts = t.Composite([
  delivery,
  t.Object({ attempts_log: t.Array(attempt) }),
]);

/** H4: an admin's retry and what came of it (the attempt is made before the answer). */
export const retriedDelivery = t.Composite([
  delivery,
  t.Object({
    attempt: t.Composite([attempt, t.Object({ outcome: choice(["succeeded", "failed"]) })]),
  }),
]);

/** U7: one delivery of an order's event, with the endpoint it went to. */
export const orderDelivery = t.Object({
  id: integer(),
  endpoint_id: integer(),
  endpoint_description: t.Nullable(t.String()),
  endpoint_url: t.String(),
  event_type: t.String(),
  message_id: t.String({ description: "The webhook-id header of every attempt" }),
  status: t.UnionEnum(deliveryStatuses),
  attempts: integer(),
  next_attempt_at: t.Nullable(t.String({ format: "date-time" })),
  last_status_code: t.Nullable(integer()),
  created_at: t.String({ format: "date-time" }),
});
export const orderDeliveries = t.Object({ items: t.Array(orderDelivery) });

export const endpointPage = page(webhookEndpoint);
export const deliveryPage = page(delivery);
export const endpointQuery = t.Object(pageQuery, { additionalProperties: true });
export const deliveryQuery = t.Object(
  {
    ...pageQuery,
    status: t.Optional(choice(deliveryStatuses)),
    order_id: t.Optional(urlInt("query", "order_id", 1, Number.MAX_SAFE_INTEGER)),
  },
  { additionalProperties: true },
);

const endpointExample = {
  id: 3,
  url: "https://warehouse.example.com/hooks/shop",
  events: ["orders.paid", "orders.refunded"],
  description: "warehouse",
  status: "enabled",
  disabled_reason: null,
  disabled_at: null,
  disabled_by: null,
  failing_since: null,
  failing_now: false,
  created_at: "2026-11-23T14:02:11.482Z",
};
// A test event's: the orders.* message ids are spelled in one place only (orders/state/).
const deliveryExample = {
  id: 118,
  event_type: "webhook.test",
  message_id: "test-5f0c2a7e-9b1d-4e36-8c55-0f3d2b9a41c7",
  order_id: null,
  status: "pending",
  attempts: 2,
  next_attempt_at: "2026-11-23T14:37:16.000Z",
  last_status_code: 503,
  created_at: "2026-11-23T14:02:11.482Z",
};

// D5: the document's named components.
named("WebhookEndpoint", webhookEndpoint, {
  description: "Where order events are delivered, signed with the endpoint's secret",
  examples: [endpointExample],
});
named("CreatedWebhookEndpoint", createdWebhookEndpoint, {
  description: "A new endpoint with its secret, shown in this answer only",
  examples: [{ ...endpointExample, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwQLmIBqk9XyU=" }],
});
named("NewWebhookEndpoint", newEndpoint, {
  examples: [
    {
      url: "https://hooks.example.com/shop",
      events: ["orders.paid", "orders.refunded"],
      description: "Fulfilment",
    },
  ],
});
named("WebhookEndpointChange", endpointChange, {
  examples: [{ events: ["*"], status: "enabled" }],
});
named("WebhookSecret", rotatedSecret);
named("WebhookEndpointPage", endpointPage, { description: "A page of webhook endpoints" });
named("Delivery", delivery, {
  description: "One order event for one endpoint, attempted until it succeeds or fails",
  examples: [deliveryExample],
});
named("DeliveryAttempt", attempt);
named("DeliveryWithAttempts", deliveryWithAttempts, {
  description: "A delivery with every attempt, oldest first",
  examples: [
    {
      ...deliveryExample,
      attempts_log: [
        {
          at: "2026-11-23T14:02:11.501Z",
          status_code: 503,
          duration_ms: 41,
          error: null,
          response_body: "Service Unavailable",
        },
        {
          at: "2026-11-23T14:02:16.530Z",
          status_code: null,
          duration_ms: 15000,
          error: "timeout",
          response_body: null,
        },
      ],
    },
  ],
});
named("DeliveryPage", deliveryPage, { description: "A page of an endpoint's deliveries" });
named("ChangedWebhookEndpoint", changedWebhookEndpoint);
named("RecoverySince", recoverySince);
named("QueuedDeliveries", queuedDeliveries, { examples: [{ queued: 12 }] });
named("RetriedDelivery", retriedDelivery, {
  description: "A delivery after an admin's retry, with that attempt's outcome",
});
named("OrderDelivery", orderDelivery);
named("OrderDeliveries", orderDeliveries, {
  description: "Every delivery of an order's events, to every endpoint, oldest first",
});

export type WebhookEndpoint = typeof webhookEndpoint.static;
export type NewEndpoint = typeof newEndpoint.static;
export type EndpointChange = typeof endpointChange.static;
export type Delivery = typeof delivery.static;
export type DeliveryWithAttempts = typeof deliveryWithAttempts.static;

import { integer } from "@commerce/shared/platform/http/fields";
import { named, problems } from "@commerce/shared/platform/openapi";
import { Elysia, t } from "elysia";
import type { ApiDeps } from "../../deps";
import { auth } from "../auth";

const figure = (description: string) =>
  t.Nullable(integer({ minimum: 0, description: `${description}; null when it cannot be read` }));

/** U3: the api's figures for the console's health line, the same readings as /metrics (N4). */
export const apiStatus = named(
  "ApiStatus",
  t.Object({
    outbox_backlog: figure("Outbox rows not yet published to JetStream"),
    outbox_dead: figure("Outbox rows set aside: their publication cannot succeed"),
    payment_consumer_lag: figure("Payment messages not yet applied (pending on the consumer)"),
    open_reviews: figure("Open payment reviews, each waiting for a person"),
    failing_endpoints: figure(
      "Enabled webhook endpoints failing now: their last attempt failed, or a delivery has been pending over 5 minutes",
    ),
    disabled_endpoints: figure(
      "Webhook endpoints disabled (by an admin, or by the api: gone, failing)",
    ),
    oldest_pending_delivery_seconds: t.Nullable(
      t.Number({
        minimum: 0,
        description:
          "Age of the oldest pending delivery to an enabled endpoint; null when none is pending (or it cannot be read)",
      }),
    ),
  }),
  {
    description:
      "The api's operating figures: what waits to go out, what waits to be applied, what waits for a person",
    examples: [
      {
        outbox_backlog: 0,
        outbox_dead: 0,
        payment_consumer_lag: 3,
        open_reviews: 1,
        failing_endpoints: 1,
        disabled_endpoints: 0,
        oldest_pending_delivery_seconds: 412.5,
      },
    ],
  },
);

/**
 * U3: GET /api/status, admin only, so the console's health line has the backlog, lag and counts
 * where /metrics is closed to all but the scraper (N4). Every figure is a gauge's cached reading
 * (5 s), so a flood of calls costs no more than a flood of scrapes.
 */
export const statusController = ({ verifyToken, metrics }: ApiDeps) =>
  new Elysia({ prefix: "/api/status", detail: { tags: ["Status"] } }).use(auth(verifyToken)).get(
    "",
    async () => {
      const [backlog, dead, lag, reviews, failing, disabled, pending, oldest] = await Promise.all(
        [
          "outbox_backlog",
          "outbox_dead",
          "payment_consumer_lag",
          "payment_reviews_open",
          "webhook_endpoints_failing_now",
          "webhook_endpoints_disabled",
          "webhook_deliveries_pending_enabled",
          "webhook_oldest_pending_delivery_seconds",
        ].map((name) => metrics.reading(name)),
      );
      return {
        outbox_backlog: backlog,
        outbox_dead: dead,
        payment_consumer_lag: lag,
        open_reviews: reviews,
        failing_endpoints: failing,
        disabled_endpoints: disabled,
        oldest_pending_delivery_seconds: pending ? oldest : null,
      };
    },
    {
      auth: "admin",
      response: { 200: apiStatus, ...problems(401, 403, 429, 503) },
      detail: {
        operationId: "getApiStatus",
        summary: "Read the api's operating figures",
        description:
          "Outbox backlog and rows set aside, the payment consumer's lag, open payment reviews, " +
          "webhook endpoints failing now and disabled, and the oldest pending delivery's age: " +
          "the figures /metrics has, for an " +
          "operator's token, read from the same 5-second cache. A figure that cannot be read " +
          "(e.g. NATS is down) is null. Admin bearer token only (scope `admin`); a customer " +
          "token is 403.",
      },
    },
  );

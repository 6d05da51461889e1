import { pageRequestOf } from "@commerce/shared/platform/http/paging";
import { problems } from "@commerce/shared/platform/openapi";
import { Elysia, t } from "elysia";
import type { ApiDeps } from "../../deps";
import { urlInt } from "../../lib/fields";
import { orderIdParam } from "../../lib/ids";
import { recordAction } from "../audit/service";
import { auth } from "../auth";
import { getDelivery, listDeliveries, listOrderDeliveries } from "./deliveries";
import { attemptNow, manualLockWaitMs } from "./manual-attempt";
import {
  deliveryPage,
  deliveryQuery,
  deliveryWithAttempts,
  orderDeliveries,
  queuedDeliveries,
  recoverySince,
  retriedDelivery,
} from "./model";
import { recoverFailed, replayMissing } from "./recovery";

const id = urlInt("path", "id", 1, Number.MAX_SAFE_INTEGER);
const endpointParam = t.Object({ id });
const deliveryParam = t.Object({
  id,
  delivery_id: urlInt("path", "delivery_id", 1, Number.MAX_SAFE_INTEGER),
});
const admin = "Admin token (scope admin).";

/**
 * H3, H4, U7, V5: an endpoint's delivery log, an admin's retry, replay-missing and recover (each
 * audited with its actor), and an order's deliveries to every endpoint.
 */
export const webhookDeliveriesController = (deps: ApiDeps) => {
  const { db, sql, verifyToken, webhooks, webhooksDue, logger, topology } = deps;
  return new Elysia({ detail: { tags: ["Webhooks"] } })
    .use(auth(verifyToken))
    .get(
      "/api/orders/:order_id/deliveries",
      ({ params }) => listOrderDeliveries(db, params.order_id),
      {
        auth: "admin",
        params: t.Object({ order_id: orderIdParam }),
        response: { 200: orderDeliveries, ...problems(400, 401, 403, 404, 429, 503) },
        detail: {
          operationId: "listOrderDeliveries",
          summary: "Did the shop's systems hear of this order? Its webhook deliveries",
          description: `Every delivery of the order's events to every endpoint, oldest first. ${admin}`,
        },
      },
    )
    .group("/api/webhook-endpoints/:id", (endpoint) =>
      endpoint
        .get(
          "/deliveries",
          ({ params, query }) =>
            listDeliveries(db, params.id, pageRequestOf(query), {
              status: query.status,
              orderId: query.order_id,
            }),
          {
            auth: "admin",
            params: endpointParam,
            query: deliveryQuery,
            response: { 200: deliveryPage, ...problems(400, 401, 403, 404, 429, 503) },
            detail: {
              operationId: "listWebhookDeliveries",
              summary: "List an endpoint's deliveries, newest first",
              description: `Optionally of one status or one order (order_id). ${admin}`,
            },
          },
        )
        .get(
          "/deliveries/:delivery_id",
          ({ params }) => getDelivery(db, params.id, params.delivery_id),
          {
            auth: "admin",
            params: deliveryParam,
            response: { 200: deliveryWithAttempts, ...problems(400, 401, 403, 404, 429, 503) },
            detail: {
              operationId: "getWebhookDelivery",
              summary: "Read one delivery with every attempt",
              description: admin,
            },
          },
        )
        .post(
          "/deliveries/:delivery_id/retry",
          async ({ params, set, principal }) => {
            const attempt = await attemptNow(sql, webhooks, params.id, params.delivery_id);
            await recordAction(db, logger, {
              actor: principal.customerId,
              action: "webhook_delivery.retry",
              target: `webhook-delivery/${params.delivery_id}`,
              detail: {
                endpoint_id: params.id,
                outcome: attempt.outcome,
                status_code: attempt.status_code,
              },
            });
            // A success may have let the order's next delivery go (H5).
            if (attempt.outcome === "succeeded") webhooksDue();
            const { attempts_log: _, ...delivery } = await getDelivery(
              db,
              params.id,
              params.delivery_id,
            );
            set.status = 202;
            return { ...delivery, attempt };
          },
          {
            auth: "admin",
            params: deliveryParam,
            response: { 202: retriedDelivery, ...problems(400, 401, 403, 404, 409, 429, 503) },
            detail: {
              operationId: "retryWebhookDelivery",
              summary: "Attempt a delivery again now, and answer its outcome",
              description:
                "The attempt is made before the answer (at most WEBHOOK_TIMEOUT_SECONDS), also " +
                "for a failed or a succeeded delivery, and `attempt` says what came of it. It " +
                "costs the delivery no place in its retry schedule: a failure leaves the next " +
                "automatic attempt where it was (and a failed delivery failed); a success ends " +
                "the delivery. Retries of one delivery are made one after another: one " +
                "waits for another's attempt, up to WEBHOOK_TIMEOUT_SECONDS + 5 s. 409 (with " +
                "`code`) while the endpoint is disabled (endpoint_disabled), an attempt is in " +
                "flight (attempt_in_flight: the dispatcher's, or a retry waited too long) or an earlier " +
                `delivery of the same order waits (order_waits_behind). ${admin}`,
            },
          },
        ),
    )
    .use(
      recoveryRoute(
        deps,
        "/replay-missing",
        "webhook_endpoint.replay_missing",
        (id, since) => replayMissing(sql, topology, id, since),
        {
          operationId: "replayMissingWebhookDeliveries",
          summary: "Deliver the events an endpoint never had a delivery for",
          description:
            "For every order event since `since` (at most 30 days back, else 400) that the " +
            "endpoint subscribes to and never had a delivery for — e.g. one that happened " +
            "while it was disabled — a delivery is made, in event order. A second call " +
            `queues 0. ${admin}`,
        },
      ),
    )
    .use(
      recoveryRoute(
        deps,
        "/recover",
        "webhook_endpoint.recover",
        (id, since) => recoverFailed(sql, id, since, manualLockWaitMs(webhooks)),
        {
          operationId: "recoverWebhookDeliveries",
          summary: "Attempt again every failed delivery since a time",
          description:
            "Every `failed` delivery of the endpoint made since `since` (at most 30 days " +
            "back, else 400) is attempted again, once, with the same webhook-id. A second " +
            "call queues 0. It waits for an admin's retry of one of them that is in flight; " +
            `409 (attempt_in_flight) if that takes too long. ${admin}`,
        },
        true,
      ),
    );
};

/**
 * H3, V5: `POST /api/webhook-endpoints/{id}<path>` `{"since", "note"?}` → 202 `{"queued"}`: `recover`
 * queues the endpoint's deliveries since `since`; the call is audited as `action` with its actor
 * and wakes the dispatcher when it queued any. Replay-missing and recover differ only in these.
 */
const recoveryRoute = <Path extends "/replay-missing" | "/recover">(
  deps: ApiDeps,
  path: Path,
  action: "webhook_endpoint.replay_missing" | "webhook_endpoint.recover",
  recover: (endpointId: number, since: string) => Promise<{ queued: number }>,
  detail: { operationId: string; summary: string; description: string },
  /** N22: recover waits for a manual attempt in flight, and may answer 409 after the wait. */
  conflicts = false,
) =>
  new Elysia({ detail: { tags: ["Webhooks"] } }).use(auth(deps.verifyToken)).post(
    `/api/webhook-endpoints/:id${path}`,
    async ({ params, body, set, principal }) => {
      const result = await recover(params.id, body.since);
      await recordAction(deps.db, deps.logger, {
        actor: principal.customerId,
        action,
        target: `webhook-endpoint/${params.id}`,
        detail: {
          since: body.since,
          queued: result.queued,
          ...(body.note === undefined ? {} : { note: body.note }),
        },
      });
      if (result.queued > 0) deps.webhooksDue();
      set.status = 202;
      return result;
    },
    {
      auth: "admin",
      parse: "json",
      params: endpointParam,
      body: recoverySince,
      response: {
        202: queuedDeliveries,
        ...(conflicts
          ? problems(400, 401, 403, 404, 409, 413, 415, 429, 503)
          : problems(400, 401, 403, 404, 413, 415, 429, 503)),
      },
      detail,
    },
  );

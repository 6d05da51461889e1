import { pageRequestOf } from "@commerce/shared/platform/http/paging";
import { problems, withResponseHeaders } from "@commerce/shared/platform/openapi";
import { type Context, Elysia, t } from "elysia";
import type { ApiDeps } from "../../deps";
import { urlInt } from "../../lib/fields";
import { auth } from "../auth";
import { getDelivery, listDeliveries, retryDelivery, sendTestEvent } from "./deliveries";
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
} from "./endpoints";
import {
  createdWebhookEndpoint,
  delivery,
  deliveryPage,
  deliveryQuery,
  deliveryWithAttempts,
  endpointChange,
  endpointPage,
  endpointQuery,
  newEndpoint,
  rotatedSecret,
  webhookEndpoint,
} from "./model";

const id = urlInt("path", "id", 1, Number.MAX_SAFE_INTEGER);
const endpointParam = t.Object({ id });
const deliveryParam = t.Object({
  id,
  delivery_id: urlInt("path", "delivery_id", 1, Number.MAX_SAFE_INTEGER),
});
const admin = "Admin token (scope admin).";

/** H1, H4: the endpoints an admin subscribed, and their delivery log. */
export const webhooksController = ({ db, verifyToken, webhooks, webhooksDue }: ApiDeps) => {
  /** A delivery queued by hand (a test event, a retry): the dispatcher is woken, the answer is 202. */
  const queued = async <T>(set: Context["set"], delivery: Promise<T>) => {
    const queuedDelivery = await delivery;
    webhooksDue();
    set.status = 202;
    return queuedDelivery;
  };
  return new Elysia({ prefix: "/api/webhook-endpoints", detail: { tags: ["Webhooks"] } })
    .use(auth(verifyToken))
    .post(
      "/",
      async ({ body, set }) => {
        const endpoint = await createEndpoint(db, body, webhooks);
        set.status = 201;
        set.headers.location = `/api/webhook-endpoints/${endpoint.id}`;
        return endpoint;
      },
      {
        auth: "admin",
        parse: "json",
        body: newEndpoint,
        response: {
          201: withResponseHeaders(createdWebhookEndpoint, "Location"),
          ...problems(400, 401, 403, 413, 415, 429, 503),
        },
        detail: {
          operationId: "createWebhookEndpoint",
          summary: "Subscribe an endpoint to order events",
          description:
            "Every order event named in `events` is POSTed to `url`, signed as the Standard " +
            "Webhooks specification says. The answer is the only one that shows the secret. " +
            `400 when the url is not https or names or resolves to an internal address. ${admin}`,
        },
      },
    )
    .get("/", ({ query }) => listEndpoints(db, pageRequestOf(query)), {
      auth: "admin",
      query: endpointQuery,
      response: { 200: endpointPage, ...problems(400, 401, 403, 429, 503) },
      detail: {
        operationId: "listWebhookEndpoints",
        summary: "List webhook endpoints, newest first",
        description: admin,
      },
    })
    .get("/:id", ({ params }) => getEndpoint(db, params.id), {
      auth: "admin",
      params: endpointParam,
      response: { 200: webhookEndpoint, ...problems(400, 401, 403, 404, 429, 503) },
      detail: {
        operationId: "getWebhookEndpoint",
        summary: "Read one webhook endpoint",
        description: admin,
      },
    })
    .patch(
      "/:id",
      async ({ params, body }) => {
        const endpoint = await updateEndpoint(db, params.id, body, webhooks);
        if (body.status === "enabled") webhooksDue();
        return endpoint;
      },
      {
        auth: "admin",
        parse: "json",
        params: endpointParam,
        body: endpointChange,
        response: { 200: webhookEndpoint, ...problems(400, 401, 403, 404, 413, 415, 429, 503) },
        detail: {
          operationId: "updateWebhookEndpoint",
          summary: "Change a webhook endpoint",
          description: `Enabling a disabled endpoint resumes its pending deliveries. ${admin}`,
        },
      },
    )
    .delete(
      "/:id",
      async ({ params, set }) => {
        await deleteEndpoint(db, params.id);
        set.status = 204;
      },
      {
        auth: "admin",
        params: endpointParam,
        response: { 204: t.Void(), ...problems(400, 401, 403, 404, 429, 503) },
        detail: {
          operationId: "deleteWebhookEndpoint",
          summary: "Delete a webhook endpoint",
          description: `Its delivery log goes with it. ${admin}`,
        },
      },
    )
    .post("/:id/rotate-secret", ({ params }) => rotateSecret(db, params.id), {
      auth: "admin",
      params: endpointParam,
      response: { 200: rotatedSecret, ...problems(400, 401, 403, 404, 429, 503) },
      detail: {
        operationId: "rotateWebhookSecret",
        summary: "Give a webhook endpoint a new secret",
        description: `For 24 hours deliveries carry signatures under both secrets. ${admin}`,
      },
    })
    .post("/:id/test", ({ params, set }) => queued(set, sendTestEvent(db, params.id)), {
      auth: "admin",
      params: endpointParam,
      response: { 202: delivery, ...problems(400, 401, 403, 404, 429, 503) },
      detail: {
        operationId: "testWebhookEndpoint",
        summary: "Send a webhook.test event to an endpoint",
        description: admin,
      },
    })
    .get(
      "/:id/deliveries",
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
          description: admin,
        },
      },
    )
    .get(
      "/:id/deliveries/:delivery_id",
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
      "/:id/deliveries/:delivery_id/retry",
      ({ params, set }) => queued(set, retryDelivery(db, params.id, params.delivery_id)),
      {
        auth: "admin",
        params: deliveryParam,
        response: { 202: delivery, ...problems(400, 401, 403, 404, 429, 503) },
        detail: {
          operationId: "retryWebhookDelivery",
          summary: "Attempt a delivery again now",
          description: `Also a delivery that has failed. ${admin}`,
        },
      },
    );
};

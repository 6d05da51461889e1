import { ValidationError } from "@commerce/shared/platform/errors";
import { pageRequestOf } from "@commerce/shared/platform/http/paging";
import { problems, withResponseHeaders } from "@commerce/shared/platform/openapi";
import { Elysia, t } from "elysia";
import type { ApiDeps } from "../../deps";
import { urlInt } from "../../lib/fields";
import { recordAction } from "../audit/service";
import { auth } from "../auth";
import { sendTestEvent } from "./deliveries";
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
} from "./endpoints";
import {
  changedWebhookEndpoint,
  createdWebhookEndpoint,
  delivery,
  disabledNotice,
  endpointChange,
  endpointPage,
  endpointQuery,
  newEndpoint,
  rotatedSecret,
  webhookEndpoint,
} from "./model";

const id = urlInt("path", "id", 1, Number.MAX_SAFE_INTEGER);
const endpointParam = t.Object({ id });
const admin = "Admin token (scope admin).";
const target = (endpointId: number) => `webhook-endpoint/${endpointId}`;

/** H1, V5: the endpoints an admin subscribed; each change on the audit log with its actor. */
export const webhooksController = ({ db, verifyToken, webhooks, webhooksDue, logger }: ApiDeps) => {
  const audit = (record: Parameters<typeof recordAction>[2]) => recordAction(db, logger, record);
  return new Elysia({ prefix: "/api/webhook-endpoints", detail: { tags: ["Webhooks"] } })
    .use(auth(verifyToken))
    .post(
      "/",
      async ({ body, set, principal }) => {
        const endpoint = await createEndpoint(db, body, webhooks);
        await audit({
          actor: principal.customerId,
          action: "webhook_endpoint.create",
          target: target(endpoint.id),
          detail: { url: body.url, events: body.events, description: body.description ?? null },
        });
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
      async ({ params, body, principal }) => {
        const { note, ...change } = body;
        // A note explains a change; alone it would be kept nowhere.
        if (note !== undefined && Object.keys(change).length === 0)
          throw new ValidationError("A note goes with a change of the endpoint", [
            {
              path: "/note",
              message: "note needs a change beside it (status, url, events or description)",
            },
          ]);
        const endpoint = await updateEndpoint(
          db,
          params.id,
          change,
          webhooks,
          principal.customerId,
        );
        if (change.status === "enabled") webhooksDue();
        const { status, ...fields } = change;
        // V5: the note, when given, is kept with each action it explains.
        const why = note === undefined ? {} : { note };
        if (Object.keys(fields).length > 0)
          await audit({
            actor: principal.customerId,
            action: "webhook_endpoint.update",
            target: target(params.id),
            detail: { ...fields, ...why },
          });
        if (status)
          await audit({
            actor: principal.customerId,
            action: status === "enabled" ? "webhook_endpoint.enable" : "webhook_endpoint.disable",
            target: target(params.id),
            detail: why,
          });
        return endpoint.status === "disabled" ? { ...endpoint, notice: disabledNotice } : endpoint;
      },
      {
        auth: "admin",
        parse: "json",
        params: endpointParam,
        body: endpointChange,
        response: {
          200: changedWebhookEndpoint,
          ...problems(400, 401, 403, 404, 413, 415, 429, 503),
        },
        detail: {
          operationId: "updateWebhookEndpoint",
          summary: "Change a webhook endpoint",
          description:
            "A disabled endpoint gets no delivery for an event that happens while it is " +
            "disabled (the answer's `notice` says so); its pending deliveries wait, and enabling " +
            "it resumes them. `replay-missing` delivers what it missed. " +
            admin,
        },
      },
    )
    .delete(
      "/:id",
      async ({ params, set, principal }) => {
        await deleteEndpoint(db, params.id);
        await audit({
          actor: principal.customerId,
          action: "webhook_endpoint.delete",
          target: target(params.id),
        });
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
    .post(
      "/:id/rotate-secret",
      async ({ params, principal }) => {
        const rotated = await rotateSecret(db, params.id);
        await audit({
          actor: principal.customerId,
          action: "webhook_endpoint.rotate_secret",
          target: target(params.id),
        });
        return rotated;
      },
      {
        auth: "admin",
        params: endpointParam,
        response: { 200: rotatedSecret, ...problems(400, 401, 403, 404, 429, 503) },
        detail: {
          operationId: "rotateWebhookSecret",
          summary: "Give a webhook endpoint a new secret",
          description: `For 24 hours deliveries carry signatures under both secrets. ${admin}`,
        },
      },
    )
    .post(
      "/:id/test",
      async ({ params, set, principal }) => {
        const queued = await sendTestEvent(db, params.id);
        await audit({
          actor: principal.customerId,
          action: "webhook_endpoint.test",
          target: target(params.id),
          detail: { delivery_id: queued.id },
        });
        webhooksDue();
        set.status = 202;
        return queued;
      },
      {
        auth: "admin",
        params: endpointParam,
        response: { 202: delivery, ...problems(400, 401, 403, 404, 429, 503) },
        detail: {
          operationId: "testWebhookEndpoint",
          summary: "Send a webhook.test event to an endpoint",
          description: admin,
        },
      },
    );
};

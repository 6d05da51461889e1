import { bearerAuth } from "@commerce/shared/platform/auth/bearer-auth";
import { pageRequestOf } from "@commerce/shared/platform/http/paging";
import { requestIdOf } from "@commerce/shared/platform/http/request-log";
import { problems } from "@commerce/shared/platform/openapi";
import { Elysia } from "elysia";
import type { PaymentsDeps } from "../../deps";
import { operatorRealm, whoMayCall } from "../../lib/operator-realm";
import {
  notificationDetail,
  notificationIdParams,
  notificationPage,
  notificationQuery,
  replayQueued,
} from "./model";
import { replayNoteOf } from "./replay-body";
import { getNotification, listNotifications, replayNotification } from "./service";

/**
 * V3: what an operator asks the payments service when a customer says "I paid but my order is
 * still pending": what arrived, whether its message went out, and a replay of that message.
 */
export function operatorController(deps: PaymentsDeps) {
  const { sql, logger, outboxWritten } = deps;
  return new Elysia({ prefix: "/api/notifications", detail: { tags: ["Operator"] } })
    .use(bearerAuth(deps.verifyToken, operatorRealm))
    .get(
      "",
      ({ query }) =>
        listNotifications(
          sql,
          {
            orderId: query.order_id,
            event: query.event,
            provider: query.provider,
            source: query.source,
          },
          pageRequestOf(query),
        ),
      {
        auth: "admin",
        query: notificationQuery,
        response: { 200: notificationPage, ...problems(400, 401, 403, 429, 503) },
        detail: {
          operationId: "listNotifications",
          summary: "List stored payment notifications, newest first",
          description:
            `${whoMayCall} Optionally of one order (order_id), one event kind (event) or one ` +
            "provider (generic, stripe, adyen), or what arrived one way (source: webhook, or " +
            "reconciliation: found by a run because its webhook never came); order_id is null " +
            "for what names no order; " +
            "page and per_page as every list (per_page 1 to 100, default 20). published_at is " +
            "when the notification's message was published, null while it waits or when its " +
            "event makes none.",
        },
      },
    )
    .get("/:id", ({ params }) => getNotification(sql, params.id), {
      auth: "admin",
      params: notificationIdParams,
      response: { 200: notificationDetail, ...problems(400, 401, 403, 404, 429, 503) },
      detail: {
        operationId: "getNotification",
        summary: "Read one stored notification with its raw body and its message's fate",
        description:
          `${whoMayCall} raw_body is the request body exactly as received; message is the ` +
          "message the webhook queued (subject, message id, when published) or null; replays " +
          "lists every replay an operator asked for.",
      },
    })
    .post(
      "/:id/replay",
      async ({ params, principal, request, status }) => {
        const note = await replayNoteOf(request);
        const actor = principal.customerId;
        const queued = await replayNotification(sql, params.id, { actor, note });
        outboxWritten();
        // V5: one line naming who replayed what (the note is in the audit log, not the log).
        logger.info("notification replay", {
          request_id: requestIdOf(request),
          notification_id: queued.notification_id,
          message_id: queued.message_id,
          subject: queued.subject,
          actor,
        });
        return status(202, queued);
      },
      {
        auth: "admin",
        parse: "none",
        params: notificationIdParams,
        response: { 202: replayQueued, ...problems(400, 401, 403, 404, 409, 413, 415, 429, 503) },
        detail: {
          operationId: "replayNotification",
          summary: "Publish a notification's message again",
          description:
            `${whoMayCall} Queues the message again with the same payload (and so the same ` +
            "notification id) under a message id of its own, so the stream's duplicate window " +
            "does not swallow it; the api applies a notification id at most once, so a replay " +
            "only changes an order whose payment the api has not applied. 202: queued; the " +
            "relay publishes it at once, or when NATS is back. 409: the event makes no message. " +
            'An optional body {"note": "..."} (1 to 1000 characters) says why; the replay ' +
            "is written to the audit log (GET /api/audit) with the token's sub and the note. " +
            "The id may be the notification's key (stripe:evt_...) or its provider's id.",
          requestBody: {
            required: false,
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  properties: { note: { type: "string", minLength: 1, maxLength: 1000 } },
                  additionalProperties: false,
                },
                example: { note: "api database restored from the 03:00 backup" },
              },
            },
          },
        },
      },
    );
}

import { pageRequestOf } from "@commerce/shared/platform/http/paging";
import { problems } from "@commerce/shared/platform/openapi";
import { Elysia, t } from "elysia";
import type { ApiDeps } from "../../deps";
import { urlInt } from "../../lib/fields";
import { auth } from "../auth";
import { resolution, review, reviewPage, reviewQuery } from "./model";
import { getReview, listReviews, resolveReview } from "./service";

const reviewIdParam = t.Object({ id: urlInt("path", "id", 1, Number.MAX_SAFE_INTEGER) });

/** V1, V2: payment messages that need a person, for admins. */
export const reviewsController = ({ db, verifyToken, topology, outboxWritten, logger }: ApiDeps) =>
  new Elysia({ prefix: "/api/payment-reviews", detail: { tags: ["Payment reviews"] } })
    .use(auth(verifyToken))
    .get("/", ({ query }) => listReviews(db, pageRequestOf(query), query.status), {
      auth: "admin",
      query: reviewQuery,
      response: { 200: reviewPage, ...problems(400, 401, 403, 429, 503) },
      detail: {
        operationId: "listPaymentReviews",
        summary: "List payment reviews, newest first",
        description:
          "Payment messages the api would not apply by itself: an unknown order, an amount or " +
          "currency that does not match, a second payment, a partial refund, a payment for a " +
          "cancelled order. Admin token (scope admin).",
      },
    })
    .get("/:id", ({ params }) => getReview(db, params.id), {
      auth: "admin",
      params: reviewIdParam,
      response: { 200: review, ...problems(400, 401, 403, 404, 429, 503) },
      detail: {
        operationId: "getPaymentReview",
        summary: "Read one payment review",
        description: "Admin token (scope admin).",
      },
    })
    .post(
      "/:id/resolve",
      async ({ params, body, principal }) => {
        const { review, moved } = await resolveReview(
          db,
          topology,
          params.id,
          body,
          principal.customerId,
        );
        if (moved) outboxWritten();
        // V5: one line naming who resolved it (the note stays on the review and the timeline).
        logger.info("payment review resolved", {
          review_id: review.id,
          order_id: review.order_id,
          resolution: review.resolution,
          actor: principal.customerId,
        });
        return review;
      },
      {
        auth: "admin",
        params: reviewIdParam,
        parse: "json",
        body: resolution,
        response: { 200: review, ...problems(400, 401, 403, 404, 409, 413, 415, 429, 503) },
        detail: {
          operationId: "resolvePaymentReview",
          summary: "Resolve a payment review",
          description:
            "apply makes the move the notification asked for (pays or refunds the order; a " +
            "cancelled order is paid again only if its stock is still there), dismiss changes " +
            "no order. Both are recorded on the order's timeline. 409 when the review is " +
            "already resolved or the move is not possible now (the review stays open). Admin " +
            "token (scope admin).",
        },
      },
    );

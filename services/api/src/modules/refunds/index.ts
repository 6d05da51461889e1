import { problems, withResponseHeaders } from "@commerce/shared/platform/openapi";
import { Elysia, t } from "elysia";
import type { ApiDeps } from "../../deps";
import { idempotencyHeaders } from "../../lib/idempotency";
import { orderIdParam } from "../../lib/ids";
import { auth } from "../auth";
import { refundList, refundRequest, refundRequested } from "./model";
import { listRefunds, requestRefund } from "./service";

/** F1: refunds through the payment's provider, asked by an admin; an order's refunds. */
export const refundsController = ({
  db,
  verifyToken,
  topology,
  outboxWritten,
  logger,
  refundProviders,
}: ApiDeps) =>
  new Elysia({ prefix: "/api/orders", detail: { tags: ["Refunds"] } })
    .use(auth(verifyToken))
    .post(
      "/:order_id/refunds",
      async ({ params, body, headers, principal, set, status }) => {
        const { refund, replayed } = await requestRefund(
          db,
          topology,
          principal,
          params.order_id,
          body,
          headers["idempotency-key"],
          await refundProviders?.configured(),
        );
        if (replayed) set.headers["idempotent-replayed"] = "true";
        else {
          outboxWritten();
          // V5: one line naming who asked (the note stays on the refund and the timeline).
          logger.info("refund requested by an admin", {
            order_id: refund.order_id,
            refund_id: refund.refund_id,
            amount: refund.amount,
            provider: refund.provider,
            actor: principal.customerId,
          });
        }
        return status(202, {
          refund_id: refund.refund_id,
          order_id: refund.order_id,
          amount: refund.amount,
          currency: refund.currency,
          status: "requested" as const,
          requested_at: refund.requested_at,
        });
      },
      {
        auth: "admin",
        params: t.Object({ order_id: orderIdParam }),
        parse: "json",
        body: refundRequest,
        headers: idempotencyHeaders,
        response: {
          202: withResponseHeaders(refundRequested, "Idempotent-Replayed"),
          ...problems(400, 401, 403, 404, 409, 413, 415, 422, 429, 503),
        },
        detail: {
          operationId: "requestRefund",
          summary: "Refund a paid order through its payment's provider",
          description:
            "Records the refund and its orders.refund_requested event in one transaction and " +
            "answers 202; the payments service asks the provider (Stripe or Adyen) for it with " +
            "the idempotency key refund-<refund_id>, and GET /api/orders/{id}/refunds shows it " +
            "move to succeeded or failed. amount defaults to all that is left to refund. 409 " +
            "when the order is not paid (code not_refundable), when more than is left is asked " +
            "(amount_over_left), or when its payment came through the generic provider, was " +
            "marked paid by hand, or came through a provider the payments service is not " +
            "configured for (refund_elsewhere: record a refund made elsewhere with a PATCH " +
            "instead). An Idempotency-Key makes retries safe. Admin token (scope admin).",
        },
      },
    )
    .get(
      "/:order_id/refunds",
      async ({ params, principal }) => {
        const list = await listRefunds(db, principal, params.order_id);
        const through = await refundProviders?.configured();
        return { ...list, refunds_through: through ? [...through].sort() : null };
      },
      {
        auth: "customer",
        params: t.Object({ order_id: orderIdParam }),
        response: { 200: refundList, ...problems(400, 401, 404, 429, 503) },
        detail: {
          operationId: "listOrderRefunds",
          summary: "An order's refunds, oldest first",
          description:
            "Each refund the shop asked for and where it stands: requested, pending (the " +
            "provider took it), succeeded or failed (with the provider's reason); and " +
            "refunds_through, the providers the payments service refunds through (null when it " +
            "has not said). The owner's customer token or an admin token; anyone else gets 404.",
        },
      },
    );

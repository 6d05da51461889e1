import { pageRequestOf } from "@commerce/shared/platform/http/paging";
import { problems, withResponseHeaders } from "@commerce/shared/platform/openapi";
import { Elysia, t } from "elysia";
import type { ApiDeps } from "../../deps";
import { createdHeaders, idempotencyHeaders } from "../../lib/idempotency";
import { orderIdParam } from "../../lib/ids";
import { auth } from "../auth";
import { holdLimitsApply } from "./holds";
import { HotProductOrders } from "./hot-product";
import {
  linesOf,
  newOrder,
  order,
  orderListQuery,
  orderPage,
  orderStatusChange,
  orderStatusChanged,
  timeline,
} from "./model";
import { orderSettingsOf, placeOnce, placeOrder } from "./placing";
import { changeStatus, getOrder, listOrders, manualRefundNotice, orderTimeline } from "./service";

export const ordersController = (deps: ApiDeps) => {
  const { db, verifyToken, topology, outboxWritten, logger } = deps;
  const settings = orderSettingsOf(deps);
  const hot = new HotProductOrders(db, settings);
  return new Elysia({ prefix: "/api/orders", detail: { tags: ["Orders"] } })
    .use(auth(verifyToken))
    .post(
      "",
      async ({ body, headers, principal, set, status }) => {
        const { lines, oneLine } = linesOf(body);
        const { order, replayed } = await placeOnce(
          db,
          outboxWritten,
          {
            customerId: principal.customerId,
            key: headers["idempotency-key"],
            what: ["POST /api/orders", body],
          },
          (executor) =>
            // One line, on the database itself (no Idempotency-Key's transaction), no hold
            // limit to check first: orders of a hot tracked product share a commit.
            executor === db &&
            lines.length === 1 &&
            (principal.admin || !holdLimitsApply(settings.holds))
              ? hot.place(principal.customerId, lines[0], oneLine)
              : placeOrder(executor, settings, principal.customerId, lines, {
                  oneLine,
                  admin: principal.admin,
                }),
        );
        Object.assign(set.headers, createdHeaders(`/api/orders/${order.order_id}`, replayed));
        return status(201, order);
      },
      {
        auth: "customer",
        parse: "json",
        body: newOrder,
        headers: idempotencyHeaders,
        response: {
          201: withResponseHeaders(order, "Location", "Idempotent-Replayed"),
          ...problems(400, 401, 404, 409, 413, 415, 422, 429, 503),
        },
        detail: {
          operationId: "createOrder",
          summary: "Place an order",
          description:
            "Either one line (`product_id`, `qty`) or `items` of 1 to 50 lines; lines naming the same product are merged into one. " +
            "Stock of tracked products is taken at once; a line it cannot cover is 409 and " +
            "nothing is taken. An Idempotency-Key makes retries safe.",
        },
      },
    )
    .get(
      "",
      ({ query, principal }) => listOrders(db, principal, pageRequestOf(query), query.status),
      {
        auth: "customer",
        query: orderListQuery,
        response: { 200: orderPage, ...problems(400, 401, 429, 503) },
        detail: {
          operationId: "listOrders",
          summary: "List own orders (all for admin), newest first, optionally by status",
        },
      },
    )
    .get("/:order_id", ({ params, principal }) => getOrder(db, principal, params.order_id), {
      auth: "customer",
      params: t.Object({ order_id: orderIdParam }),
      response: { 200: order, ...problems(400, 401, 404, 429, 503) },
      detail: {
        operationId: "getOrder",
        summary: "Read an order: own, or any for admin; others answer 404",
      },
    })
    .get(
      "/:order_id/events",
      ({ params, principal }) => orderTimeline(db, principal, params.order_id),
      {
        auth: "customer",
        params: t.Object({ order_id: orderIdParam }),
        response: { 200: timeline, ...problems(400, 401, 404, 429, 503) },
        detail: {
          operationId: "getOrderTimeline",
          summary: "An order's timeline",
          description:
            "Everything that happened to the order, oldest first: created, paid, cancelled, " +
            "refunded, payment_failed, dispute_opened / _won / _lost (a dispute or chargeback; " +
            "the status does not change), review_opened, review_resolved, each with its source and " +
            "the payment notification that caused it. The owner's customer token or an admin " +
            "token; anyone else gets 404.",
        },
      },
    )
    .patch(
      "/:order_id",
      async ({ params, body, principal }) => {
        const { order, moved } = await changeStatus(db, topology, principal, params.order_id, body);
        if (moved) outboxWritten();
        if (!principal.admin) return order;
        // V5: one line naming who moved the order by hand (the note stays on the timeline).
        logger.info("order moved by an admin", {
          order_id: order.order_id,
          status: order.status,
          moved,
          actor: principal.customerId,
        });
        return moved && order.status === "refunded"
          ? { ...order, notice: manualRefundNotice }
          : order;
      },
      {
        auth: "customer",
        params: t.Object({ order_id: orderIdParam }),
        parse: "json",
        body: orderStatusChange,
        response: {
          200: orderStatusChanged,
          ...problems(400, 401, 403, 404, 409, 413, 415, 429, 503),
        },
        detail: {
          operationId: "changeOrderStatus",
          summary: "Move an order to another status",
          description:
            "created → paid, created → cancelled and paid → refunded. An admin may make any of " +
            "them, with a `note` saying why (400 without one), recorded with the admin's token " +
            "`sub` as `actor` on the timeline and on the `orders.*` event; a customer may only " +
            "cancel their own unpaid order. Asking for the status the order already has answers " +
            "it unchanged; a move that is not allowed is 409. Marking paid an order with an open " +
            "payment review is 409 (`code` `open_review`, naming the review): resolve the review " +
            "instead. An admin's `refunded` records a refund made elsewhere and sends no money " +
            "back; its answer says so in `notice`.",
        },
      },
    );
};

import { problems } from "@commerce/shared/openapi";
import { Elysia, t } from "elysia";
import type { ApiDeps } from "../../deps";
import { orderIdParam } from "../../lib/ids";
import { pageRequestOf } from "../../lib/paging";
import { auth } from "../auth";
import { newOrder, order, orderHeaders, orderListQuery, orderPage, orderPaidChange } from "./model";
import { createOrder, createOrderOnce, getOrder, listOrders, payOrderManually } from "./service";

export const ordersController = ({
  db,
  verifyToken,
  storeCurrency,
  topology,
  outboxWritten,
}: ApiDeps) =>
  new Elysia({ prefix: "/api/orders", detail: { tags: ["Orders"] } })
    .use(auth(verifyToken))
    .post(
      "/",
      async ({ body, headers, principal, set, status }) => {
        const key = headers["idempotency-key"];
        const result = key
          ? await createOrderOnce(db, principal.customerId, key, body, storeCurrency)
          : {
              status: 201,
              body: await createOrder(db, principal.customerId, body, storeCurrency),
              replayed: false,
            };
        set.headers.location = `/api/orders/${result.body.order_id}`;
        if (result.replayed) set.headers["idempotent-replayed"] = "true";
        return status(201, result.body);
      },
      {
        auth: "customer",
        parse: "json",
        body: newOrder,
        headers: orderHeaders,
        response: { 201: order, ...problems(400, 401, 404, 409, 413, 415, 422, 429, 503) },
        detail: { summary: "Place an order; an Idempotency-Key makes retries safe" },
      },
    )
    .get("/", ({ query, principal }) => listOrders(db, principal, pageRequestOf(query)), {
      auth: "customer",
      query: orderListQuery,
      response: { 200: orderPage, ...problems(400, 401, 429, 503) },
      detail: { summary: "List own orders (all for admin), newest first" },
    })
    .get("/:order_id", ({ params, principal }) => getOrder(db, principal, params.order_id), {
      auth: "customer",
      params: t.Object({ order_id: orderIdParam }),
      response: { 200: order, ...problems(400, 401, 404, 429, 503) },
      detail: { summary: "Read an order: own, or any for admin; others answer 404" },
    })
    .patch(
      "/:order_id",
      async ({ params }) => {
        const { order, moved } = await payOrderManually(db, params.order_id, topology.orders.paid);
        if (moved) outboxWritten();
        return order;
      },
      {
        auth: "admin",
        params: t.Object({ order_id: orderIdParam }),
        parse: "json",
        body: orderPaidChange,
        response: { 200: order, ...problems(400, 401, 403, 404, 413, 415, 429, 503) },
        detail: { summary: "Mark an order paid (admin); already paid answers it unchanged" },
      },
    );

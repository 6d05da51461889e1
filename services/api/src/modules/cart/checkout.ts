import { ValidationError } from "@commerce/shared/platform/errors";
import { problems, withResponseHeaders } from "@commerce/shared/platform/openapi";
import { Elysia, t } from "elysia";
import type { ApiDeps } from "../../deps";
import { createdHeaders, idempotencyHeaders } from "../../lib/idempotency";
import { auth } from "../auth";
import { order } from "../orders/model";
import { orderSettingsOf, placeOnce } from "../orders/placing";
import { checkout } from "./service";

/**
 * C4: checkout takes no body, or `{}`. Elysia lets any JSON through an optional body schema
 * (a body of `7` placed the order), so the handler makes sure.
 */
function assertNoBody(body: unknown): void {
  const empty =
    body === undefined ||
    (typeof body === "object" &&
      body !== null &&
      !Array.isArray(body) &&
      Object.keys(body).length === 0);
  if (!empty)
    throw new ValidationError("The request body is invalid", [
      { path: "", message: "checkout takes no body, or {}" },
    ]);
}

/** POST /api/cart/checkout: the cart becomes an order (placed by the orders feature's `placeOrder`). */
export const checkoutController = (deps: ApiDeps) => {
  const { db, verifyToken, outboxWritten } = deps;
  const settings = orderSettingsOf(deps);
  return new Elysia({ prefix: "/api/cart", detail: { tags: ["Cart"] } })
    .use(auth(verifyToken))
    .post(
      "/checkout",
      async ({ body, headers, principal, set, status }) => {
        assertNoBody(body);
        const { order: placed, replayed } = await placeOnce(
          db,
          outboxWritten,
          {
            customerId: principal.customerId,
            key: headers["idempotency-key"],
            what: "POST /api/cart/checkout",
          },
          (executor) =>
            checkout(executor, settings, principal.customerId, { admin: principal.admin }),
        );
        Object.assign(set.headers, createdHeaders(`/api/orders/${placed.order_id}`, replayed));
        return status(201, placed);
      },
      {
        auth: "customer",
        parse: "json",
        body: t.Optional(t.Object({}, { additionalProperties: false })),
        headers: idempotencyHeaders,
        response: {
          201: withResponseHeaders(order, "Location", "Idempotent-Replayed"),
          ...problems(400, 401, 409, 413, 415, 422, 429, 503),
        },
        detail: {
          operationId: "checkoutCart",
          summary: "Check out the cart",
          description:
            "Makes an order of the cart's lines at current prices and empties the cart, in one " +
            "step. An empty cart is 409; a line the stock cannot cover is 409 and the cart is " +
            "kept. An Idempotency-Key makes retries safe.",
        },
      },
    );
};

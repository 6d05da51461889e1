import { problems } from "@commerce/shared/platform/openapi";
import { Elysia, t } from "elysia";
import type { ApiDeps } from "../../deps";
import { auth } from "../auth";
import { cart, cartItem, cartItemChange, cartItemParams } from "./model";
import { getCart, putCartItem, removeCartItem } from "./service";

export const cartController = ({ db, verifyToken }: ApiDeps) =>
  new Elysia({ prefix: "/api/cart", detail: { tags: ["Cart"] } })
    .use(auth(verifyToken))
    .get("", ({ principal }) => getCart(db, principal.customerId), {
      auth: "customer",
      response: { 200: cart, ...problems(401, 429, 503) },
      detail: { operationId: "getCart", summary: "Read the caller's cart" },
    })
    .put(
      "/items/:product_id",
      async ({ params, body, principal, status }) => {
        const { item, created } = await putCartItem(
          db,
          principal.customerId,
          params.product_id,
          body.qty,
        );
        return created ? status(201, item) : status(200, item);
      },
      {
        auth: "customer",
        params: cartItemParams,
        parse: "json",
        body: cartItemChange,
        response: { 200: cartItem, 201: cartItem, ...problems(400, 401, 404, 413, 415, 429, 503) },
        detail: {
          operationId: "putCartItem",
          summary: "Put a product in the cart or change its quantity",
        },
      },
    )
    .delete(
      "/items/:product_id",
      async ({ params, principal, status }) => {
        await removeCartItem(db, principal.customerId, params.product_id);
        return status(204, undefined);
      },
      {
        auth: "customer",
        params: cartItemParams,
        response: { 204: t.Void(), ...problems(400, 401, 404, 429, 503) },
        detail: { operationId: "removeCartItem", summary: "Remove a product from the cart" },
      },
    );

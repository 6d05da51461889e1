import { pageRequestOf } from "@commerce/shared/platform/http/paging";
import { problems, withResponseHeaders } from "@commerce/shared/platform/openapi";
import { Elysia, t } from "elysia";
import type { ApiDeps } from "../../deps";
import { productIdParam } from "../../lib/ids";
import { auth } from "../auth";
import { newProduct, product, productChange, productPage, productQuery } from "./model";
import { createProduct, getProduct, listProducts, updateProduct } from "./service";

export const productsController = ({ db, verifyToken }: ApiDeps) =>
  new Elysia({ prefix: "/api/products", detail: { tags: ["Products"] } })
    .use(auth(verifyToken))
    .get("", ({ query }) => listProducts(db, query.category, pageRequestOf(query)), {
      auth: "customer",
      query: productQuery,
      response: { 200: productPage, ...problems(400, 401, 429, 503) },
      detail: {
        operationId: "listProducts",
        summary: "List products, optionally of one category, a page at a time",
      },
    })
    .get("/:id", ({ params }) => getProduct(db, params.id), {
      auth: "customer",
      params: t.Object({ id: productIdParam("id") }),
      response: { 200: product, ...problems(400, 401, 404, 429, 503) },
      detail: { operationId: "getProduct", summary: "Read one product" },
    })
    .post(
      "",
      async ({ body, set, status }) => {
        const created = await createProduct(db, body);
        set.headers.location = `/api/products/${created.id}`;
        return status(201, created);
      },
      {
        auth: "admin",
        parse: "json",
        body: newProduct,
        response: {
          201: withResponseHeaders(product, "Location"),
          ...problems(400, 401, 403, 413, 415, 429, 503),
        },
        detail: { operationId: "createProduct", summary: "Create a product (admin)" },
      },
    )
    .patch("/:id", ({ params, body }) => updateProduct(db, params.id, body), {
      auth: "admin",
      params: t.Object({ id: productIdParam("id") }),
      parse: "json",
      body: productChange,
      response: { 200: product, ...problems(400, 401, 403, 404, 413, 415, 429, 503) },
      detail: {
        operationId: "updateProduct",
        summary: "Change a product's name, price or category (admin)",
      },
    });

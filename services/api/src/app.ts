import { databaseIsUp } from "@commerce/shared/database";
import { problemErrors } from "@commerce/shared/http/problems";
import { requestLog } from "@commerce/shared/http/request-log";
import { openapiDocs } from "@commerce/shared/openapi";
import { operationalRoutes } from "@commerce/shared/operational-routes";
import { Elysia } from "elysia";
import type { ApiDeps } from "./deps";
import { jsonBody } from "./lib/json-body";
import { auth } from "./modules/auth";
import { cartController } from "./modules/cart";
import { ordersController } from "./modules/orders";
import { checkoutController } from "./modules/orders/checkout";
import { productsController } from "./modules/products";
import { reviewsController } from "./modules/reviews";

export const apiBodyLimit = 16 * 1024;

export function createApp(deps: ApiDeps) {
  return (
    new Elysia({ normalize: false })
      .use(requestLog(deps))
      .use(problemErrors(deps))
      // Credentials are checked before the body, so anonymous callers learn nothing of the schemas.
      .use(auth(deps.verifyToken, deps.rateLimiter))
      .use(jsonBody({ limitBytes: apiBodyLimit }))
      .use(
        openapiDocs({
          title: "Shop API",
          description: "Products, orders and cart. Every /api route needs a bearer token.",
          bearer: true,
        }),
      )
      .use(
        operationalRoutes({
          metrics: deps.metrics,
          checks: [{ name: "database", check: () => databaseIsUp(deps.sql) }, ...deps.readiness],
        }),
      )
      .use(productsController(deps))
      .use(ordersController(deps))
      .use(cartController(deps))
      .use(checkoutController(deps))
      .use(reviewsController(deps))
  );
}

export type App = ReturnType<typeof createApp>;

import { databaseIsUp, type Sql } from "@commerce/shared/database";
import { httpPlugin, jsonBodyPlugin } from "@commerce/shared/http";
import type { Logger } from "@commerce/shared/logger";
import type { MessageTopology } from "@commerce/shared/messages";
import type { Metrics } from "@commerce/shared/metrics";
import { openapiDocs } from "@commerce/shared/openapi";
import { opsRoutes, type ReadinessCheck } from "@commerce/shared/ops";
import type { RateLimiter } from "@commerce/shared/rate-limit";
import { Elysia } from "elysia";
import type { Database } from "./db";
import { auth } from "./modules/auth";
import type { TokenVerifier } from "./modules/auth/service";
import { cartController } from "./modules/cart";
import { ordersController } from "./modules/orders";
import { productsController } from "./modules/products";

export type ApiDeps = {
  sql: Sql;
  db: Database;
  verifyToken: TokenVerifier;
  /** Requests per token subject (429 past the budget). */
  rateLimiter: RateLimiter;
  storeCurrency: string;
  topology: MessageTopology;
  logger: Logger;
  metrics: Metrics;
  /** Readiness beyond the database, e.g. the NATS connection. */
  readiness?: ReadinessCheck[];
  /** Called after a transaction that wrote to the outbox commits, so the relay publishes now. */
  outboxWritten: () => void;
};

export const apiBodyLimit = 16 * 1024;

export function createApp(deps: ApiDeps) {
  return (
    new Elysia({ normalize: false })
      .use(httpPlugin(deps))
      // Credentials are checked before the body, so anonymous callers learn nothing of the schemas.
      .use(auth(deps.verifyToken, deps.rateLimiter))
      .use(jsonBodyPlugin({ limitBytes: apiBodyLimit }))
      .use(
        openapiDocs({
          title: "Shop API",
          description: "Products, orders and cart. Every /api route needs a bearer token.",
          bearer: true,
        }),
      )
      .use(
        opsRoutes({
          metrics: deps.metrics,
          checks: [
            { name: "database", check: () => databaseIsUp(deps.sql) },
            ...(deps.readiness ?? []),
          ],
        }),
      )
      .use(productsController(deps))
      .use(ordersController(deps))
      .use(cartController(deps))
  );
}

export type App = ReturnType<typeof createApp>;

import { databaseIsUp } from "@commerce/shared/database";
import { problemErrors } from "@commerce/shared/http/problems";
import { requestLog } from "@commerce/shared/http/request-log";
import { openapiDocs } from "@commerce/shared/openapi";
import { operationalRoutes } from "@commerce/shared/operational-routes";
import { Elysia } from "elysia";
import type { ApiDeps } from "./deps";
import { jsonBody } from "./lib/json-body";
import { auth, bearerSecurity } from "./modules/auth";
import { cartController } from "./modules/cart";
import { ordersController } from "./modules/orders";
import { checkoutController } from "./modules/orders/checkout";
import { productsController } from "./modules/products";
import { reviewsController } from "./modules/reviews";

export const apiBodyLimit = 16 * 1024;

const apiDescription = `Products, orders and the cart of the shop. Every \`/api\` route needs a bearer token.

**Getting a token.** Tokens are HS256 JWTs signed with the service's \`AUTH_JWT_SECRET\`, with the
customer's id in \`sub\` and an expiry in \`exp\`; an admin token also has \`"scope": "admin"\`.
Locally, \`npm run token -- --sub alice\` prints a customer token and
\`npm run token -- --sub alice --admin\` an admin one (\`npm start\` prints both). In Swagger UI,
press **Authorize** and paste the token alone, without \`Bearer\`.

Errors are \`application/problem+json\` (RFC 9457). Requests are rate limited per token subject;
the RateLimit-Policy and RateLimit headers say how much is left.`;

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
          description: apiDescription,
          rateLimited: (path) => path.startsWith("/api/"),
          security: [bearerSecurity],
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

import { databaseIsUp } from "@commerce/shared/platform/database";
import { requestPipeline } from "@commerce/shared/platform/http/pipeline";
import { RouteMethods } from "@commerce/shared/platform/http/route-methods";
import { openapiDocs } from "@commerce/shared/platform/openapi";
import { operationalRoutes } from "@commerce/shared/platform/operational-routes";
import { Elysia } from "elysia";
import type { ApiDeps } from "./deps";
import { jsonBody } from "./lib/json-body";
import { auditController } from "./modules/audit";
import { auth, bearerSecurity } from "./modules/auth";
import { cartController } from "./modules/cart";
import { checkoutController } from "./modules/cart/checkout";
import { consoleController } from "./modules/console";
import { signInController } from "./modules/console/sign-in";
import { ordersController } from "./modules/orders";
import { orderBodyShapes } from "./modules/orders/model";
import { outboxController } from "./modules/outbox";
import { productsController } from "./modules/products";
import { refundsController } from "./modules/refunds";
import { reviewsController } from "./modules/reviews";
import { statusController } from "./modules/status";
import { webhooksController } from "./modules/webhooks";
import { webhookDeliveriesController } from "./modules/webhooks/delivery-routes";

export const apiBodyLimit = 16 * 1024;

const apiDescription = `Products, orders and the cart of the shop. Every \`/api\` route needs a bearer token.

**Getting a token.** Tokens are JWTs with the customer's id in \`sub\` and an expiry in \`exp\`;
an admin token also has \`"scope": "admin"\`. A deployment verifies ES256/RS256 tokens with a
public key (\`AUTH_PUBLIC_KEY\` or \`AUTH_JWKS_URL\`, with \`iss\` and \`aud\` required); locally
they are HS256 JWTs signed with \`AUTH_JWT_SECRET\`.
Locally, \`npm run token -- --sub alice\` prints a customer token and
\`npm run token -- --sub alice --admin\` an admin one (\`npm start\` prints both). In Swagger UI,
press **Authorize** and paste the token alone, without \`Bearer\`.

Errors are \`application/problem+json\` (RFC 9457). Requests are rate limited per token subject
(requests without a valid token per client address);
the RateLimit-Policy and RateLimit headers say how much is left.`;

export function createApp(deps: ApiDeps) {
  // E4: a served path asked with another method is 405, from this app's own routes.
  const routes = new RouteMethods();
  const app = new Elysia({ normalize: false })
    .use(
      requestPipeline(
        { ...deps, routes },
        {
          callers: [
            auth(deps.verifyToken, deps.rateLimiter, {
              limiter: deps.rejectedLimiter,
              trustProxy: deps.trustProxy,
            }),
          ],
          body: jsonBody({ limitBytes: apiBodyLimit }),
        },
      ),
    )
    .use(
      openapiDocs({
        title: "Shop API",
        description: apiDescription,
        rateLimited: (path) => path.startsWith("/api/"),
        security: [bearerSecurity],
        tags: [
          {
            name: "Operations",
            description: "Liveness, readiness and metrics, for the platform; no credentials",
          },
          {
            name: "Products",
            description: "The catalogue: anyone with a token reads it, admins change it",
          },
          {
            name: "Orders",
            description:
              "Placing, reading and moving orders, and each order's timeline; a customer sees only their own",
          },
          {
            name: "Refunds",
            description:
              "Refunds of paid orders through the payment's provider (Stripe, Adyen), asked by an admin, and where each stands",
          },
          {
            name: "Cart",
            description: "Each customer's one cart, and checking it out into an order",
          },
          {
            name: "Webhooks",
            description:
              "Endpoints an admin subscribes to order events, signed as Standard Webhooks say, and their delivery log",
          },
          {
            name: "Status",
            description:
              "The figures an operator watches (outbox, payment consumer, reviews, failing and disabled endpoints, the oldest pending delivery); admin token only",
          },
          {
            name: "Audit",
            description:
              "Who did what that moved no order (webhook endpoint changes, retries, replays), for admins",
          },
          {
            name: "Payment reviews",
            description:
              "Payment messages the api would not apply by itself, for an admin to apply or dismiss",
          },
        ],
        schemas: orderBodyShapes,
        requestBodies: {
          createOrder: {
            required: true,
            content: {
              "application/json": {
                schema: {
                  oneOf: [
                    { $ref: "#/components/schemas/OneLineOrder" },
                    { $ref: "#/components/schemas/OrderOfItems" },
                  ],
                },
                examples: {
                  oneLine: { summary: "One line", value: { product_id: 42, qty: 2 } },
                  items: {
                    summary: "Several lines",
                    value: {
                      items: [
                        { product_id: 42, qty: 2 },
                        { product_id: 7, qty: 1 },
                      ],
                    },
                  },
                },
              },
            },
          },
          changeOrderStatus: {
            required: true,
            description:
              "An admin's move carries a note saying why (400 without one); a customer cancels their own unpaid order with or without one",
            content: {
              "application/json": {
                schema: {
                  oneOf: [
                    { $ref: "#/components/schemas/OrderMoveWithNote" },
                    { $ref: "#/components/schemas/OrderCancel" },
                  ],
                },
                examples: {
                  adminMove: {
                    summary: "An admin's move, with its note",
                    value: {
                      status: "refunded",
                      note: "Refunded by hand in the Stripe dashboard, ticket 4411",
                    },
                  },
                  cancel: { summary: "A customer's cancel", value: { status: "cancelled" } },
                },
              },
            },
          },
          checkoutCart: {
            required: false,
            description: "No body, or an empty object",
            content: {
              "application/json": {
                schema: { type: "object", additionalProperties: false, maxProperties: 0 },
                example: {},
              },
            },
          },
        },
      }),
    )
    .use(
      operationalRoutes({
        metrics: deps.metrics,
        metricsToken: deps.metricsToken,
        checks: [{ name: "database", check: () => databaseIsUp(deps.sql) }, ...deps.readiness],
      }),
    )
    .use(productsController(deps))
    .use(ordersController(deps))
    .use(refundsController(deps))
    .use(cartController(deps))
    .use(checkoutController(deps))
    .use(reviewsController(deps))
    .use(outboxController(deps))
    .use(consoleController(deps))
    .use(signInController(deps))
    .use(webhooksController(deps))
    .use(webhookDeliveriesController(deps))
    .use(auditController(deps))
    .use(statusController(deps));
  routes.readFrom(() => app.routes);
  return app;
}

export type App = ReturnType<typeof createApp>;

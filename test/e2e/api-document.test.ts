import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { signPayload } from "@commerce/shared/contract/signature";
import { eventually, unique, webhookSecret } from "@commerce/testing/basics";
import { type ServiceProcess, type Stack, startStack } from "@commerce/testing/processes";
import {
  adyenBatch,
  adyenItem,
  basicAuth,
  providersEnv,
  signedItem,
  stripeBody,
  stripeEvent,
  stripeSignature,
} from "@commerce/testing/provider-requests";
import { webhookEndpoints } from "@commerce/testing/webhook-endpoints";
import Ajv2020 from "ajv/dist/2020";

setDefaultTimeout(60_000);

type Json = Record<string, any>;

let stack: Stack;
const documents: Record<string, Json> = {};
beforeAll(async () => {
  // A limit high enough never to refuse, on, so the RateLimit headers are sent.
  // Stripe and Adyen on, so their routes are in the document this test checks.
  stack = await startStack({
    env: { ...providersEnv, RATE_LIMIT_RPS: "1000", RATE_LIMIT_BURST: "2000" },
  });
  for (const service of [stack.api, stack.payments])
    documents[service.name] = (await (await fetch(`${service.url}/swagger/json`)).json()) as Json;
});
// The endpoint the walk makes is deleted by it; should the walk stop before, it goes here.
const endpoints = webhookEndpoints(() => stack.sql);
afterAll(async () => {
  await endpoints.clear();
  await stack.stop();
});

const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });

/** The schema with every `#/components/...` reference replaced by what it names. */
function resolve(document: Json, node: unknown): unknown {
  if (Array.isArray(node)) return node.map((item) => resolve(document, item));
  if (typeof node !== "object" || node === null) return node;
  const { $ref, ...rest } = node as Json;
  if (typeof $ref === "string") {
    const target = $ref
      .slice(2)
      .split("/")
      .reduce((at: Json, key: string) => at[key], document);
    return resolve(document, { ...target, ...rest });
  }
  return Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, resolve(document, v)]));
}

const seen = new Set<string>();

/**
 * Sends one request and checks the answer against the service's document: a documented status,
 * the documented media type, every required header (each header present matching its schema)
 * and the body matching the response schema.
 */
async function call(
  service: ServiceProcess,
  method: string,
  template: string,
  init: { path?: string; token?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const document = documents[service.name];
  const operation = document.paths[template]?.[method.toLowerCase()];
  expect(operation, `${method} ${template} is documented`).toBeDefined();
  seen.add(`${service.name} ${method} ${template}`);
  const headers: Record<string, string> = { ...init.headers };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers["content-type"] ??= "application/json";
  const response = await fetch(`${service.url}${init.path ?? template}`, {
    method,
    headers,
    body:
      init.body === undefined
        ? undefined
        : typeof init.body === "string"
          ? init.body
          : JSON.stringify(init.body),
  });
  const text = await response.text();
  const where = `${method} ${init.path ?? template} → ${response.status} ${text.slice(0, 200)}`;
  const documented = resolve(document, operation.responses[String(response.status)]) as Json;
  expect(documented, `${where}: status documented`).toBeDefined();

  for (const [name, header] of Object.entries<Json>(documented.headers ?? {})) {
    const value = response.headers.get(name);
    if (header.required) expect(value, `${where}: header ${name}`).not.toBeNull();
    if (value === null) continue;
    const typed = header.schema.type === "integer" ? Number(value) : value;
    expect(ajv.validate(header.schema, typed), `${where}: header ${name}: ${value}`).toBe(true);
  }

  if (!documented.content) {
    expect(text, `${where}: no content`).toBe("");
    return { status: response.status, headers: response.headers, json: undefined as any };
  }
  const mediaType = (response.headers.get("content-type") ?? "").split(";")[0].trim();
  expect(Object.keys(documented.content), `${where}: media type`).toContain(mediaType);
  const schema = documented.content[mediaType].schema;
  const body = mediaType.endsWith("json") ? JSON.parse(text) : text;
  const valid = ajv.validate(schema, body);
  expect(valid ? [] : ajv.errors, `${where}: body`).toEqual([]);
  return { status: response.status, headers: response.headers, json: body };
}

describe("every documented operation, against the running services", () => {
  test("D1: each answer has a documented status, media type, headers and body", async () => {
    const { api, payments, admin, customer } = stack;
    const other = await (await import("@commerce/testing/basics")).signToken(unique("other"));
    for (const service of [api, payments]) {
      for (const probe of ["/health", "/ready", "/metrics"])
        expect((await call(service, "GET", probe)).status).toBe(200);
    }

    const category = unique("c");
    const newProduct = { name: "Desk lamp", price: 1999, category, stock: 10 };
    const created = await call(api, "POST", "/api/products", { token: admin, body: newProduct });
    expect(created.status).toBe(201);
    expect(created.headers.get("location")).toBe(`/api/products/${created.json.id}`);
    const id = created.json.id;
    expect(
      (await call(api, "POST", "/api/products", { token: customer, body: newProduct })).status,
    ).toBe(403);
    expect(
      (await call(api, "POST", "/api/products", { token: admin, body: "{", headers: {} })).status,
    ).toBe(400);
    expect(
      (
        await call(api, "POST", "/api/products", {
          token: admin,
          body: JSON.stringify({ ...newProduct, pad: "x".repeat(17_000) }),
        })
      ).status,
    ).toBe(413);
    expect(
      (
        await call(api, "POST", "/api/products", {
          token: admin,
          body: "name=x",
          headers: { "content-type": "text/plain" },
        })
      ).status,
    ).toBe(415);

    const list = `/api/products?category=${category}`;
    expect((await call(api, "GET", "/api/products", { path: list, token: customer })).status).toBe(
      200,
    );
    expect(
      (await call(api, "GET", "/api/products", { path: "/api/products?page=0", token: customer }))
        .status,
    ).toBe(400);
    expect((await call(api, "GET", "/api/products")).status).toBe(401);

    const one = (n: number | string) => ({ path: `/api/products/${n}`, token: customer });
    expect((await call(api, "GET", "/api/products/{id}", one(id))).status).toBe(200);
    expect((await call(api, "GET", "/api/products/{id}", one(2147483000))).status).toBe(404);
    expect((await call(api, "GET", "/api/products/{id}", one("0x10"))).status).toBe(400);
    expect(
      (
        await call(api, "PATCH", "/api/products/{id}", {
          path: `/api/products/${id}`,
          token: admin,
          body: { price: 2499 },
        })
      ).status,
    ).toBe(200);

    const keyed = {
      token: customer,
      body: { product_id: id, qty: 1 },
      headers: { "idempotency-key": unique("k") },
    };
    const order = await call(api, "POST", "/api/orders", keyed);
    expect(order.status).toBe(201);
    const replay = await call(api, "POST", "/api/orders", keyed);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(
      (await call(api, "POST", "/api/orders", { ...keyed, body: { product_id: id, qty: 2 } }))
        .status,
    ).toBe(422);
    expect(
      (
        await call(api, "POST", "/api/orders", {
          token: customer,
          body: { product_id: id, qty: 999 },
        })
      ).status,
    ).toBe(409);
    expect(
      (
        await call(api, "POST", "/api/orders", {
          token: customer,
          body: { product_id: 2147483000, qty: 1 },
        })
      ).status,
    ).toBe(404);
    expect((await call(api, "GET", "/api/orders", { token: customer })).status).toBe(200);
    const mine = { path: `/api/orders/${order.json.order_id}` };
    expect(
      (await call(api, "GET", "/api/orders/{order_id}", { ...mine, token: customer })).status,
    ).toBe(200);
    expect(
      (await call(api, "GET", "/api/orders/{order_id}", { ...mine, token: other })).status,
    ).toBe(404);
    const cancel = { ...mine, token: customer, body: { status: "cancelled" } };
    expect((await call(api, "PATCH", "/api/orders/{order_id}", cancel)).status).toBe(200);
    expect(
      (await call(api, "PATCH", "/api/orders/{order_id}", { ...cancel, body: { status: "paid" } }))
        .status,
    ).toBe(403);

    const item = { path: `/api/cart/items/${id}`, token: customer, body: { qty: 1 } };
    expect((await call(api, "PUT", "/api/cart/items/{product_id}", item)).status).toBe(201);
    expect((await call(api, "PUT", "/api/cart/items/{product_id}", item)).status).toBe(200);
    expect((await call(api, "GET", "/api/cart", { token: customer })).status).toBe(200);
    const checkout = await call(api, "POST", "/api/cart/checkout", { token: customer });
    expect(checkout.status).toBe(201);
    expect(checkout.headers.get("location")).toBe(`/api/orders/${checkout.json.order_id}`);
    expect((await call(api, "POST", "/api/cart/checkout", { token: customer })).status).toBe(409);
    expect((await call(api, "PUT", "/api/cart/items/{product_id}", item)).status).toBe(201);
    const remove = { path: item.path, token: customer };
    expect((await call(api, "DELETE", "/api/cart/items/{product_id}", remove)).status).toBe(204);
    expect((await call(api, "DELETE", "/api/cart/items/{product_id}", remove)).status).toBe(404);

    const notification = {
      event: "payment.succeeded",
      order_id: checkout.json.order_id,
      amount: checkout.json.amount,
      currency: checkout.json.currency,
      id: unique("evt"),
    };
    const raw = JSON.stringify(notification);
    const signed = (body: string) => ({
      body,
      headers: { "x-signature": signPayload(body, webhookSecret, Math.floor(Date.now() / 1000)) },
    });
    const webhook = "/api/webhooks/payment";
    expect((await call(payments, "POST", webhook, signed(raw))).status).toBe(200);
    expect((await call(payments, "POST", webhook, signed(raw))).json).toEqual({
      received: true,
      duplicate: true,
    });
    expect((await call(payments, "POST", webhook, { body: raw })).status).toBe(401);
    expect((await call(payments, "POST", webhook, signed('{"event":1}'))).status).toBe(400);
    expect(
      (
        await call(payments, "POST", webhook, {
          ...signed(raw),
          headers: { "content-type": "text/plain" },
        })
      ).status,
    ).toBe(415);
    expect(
      (await call(payments, "POST", webhook, signed(`{"pad":"${"x".repeat(70_000)}"}`))).status,
    ).toBe(413);

    // Stripe's and Adyen's routes (G1), as those providers send: accepted, forged, malformed.
    const stripe = stripeEvent("customer.created", { id: "cus_doc", object: "customer" });
    const stripeBodyText = stripeBody(stripe);
    const stripeSigned = async (body: string) => ({
      body,
      headers: {
        "content-type": "application/json; charset=utf-8",
        "stripe-signature": await stripeSignature(body),
      },
    });
    const stripeRoute = "/api/webhooks/stripe";
    expect(
      (await call(payments, "POST", stripeRoute, await stripeSigned(stripeBodyText))).status,
    ).toBe(200);
    expect((await call(payments, "POST", stripeRoute, { body: stripeBodyText })).status).toBe(401);
    expect((await call(payments, "POST", stripeRoute, await stripeSigned("{"))).status).toBe(400);
    const adyen = JSON.stringify(
      adyenBatch([signedItem(adyenItem(null, { eventCode: "REPORT_AVAILABLE" }))]),
    );
    const adyenRoute = "/api/webhooks/adyen";
    const basic = { authorization: basicAuth() };
    expect((await call(payments, "POST", adyenRoute, { body: adyen, headers: basic })).json).toBe(
      "[accepted]",
    );
    expect((await call(payments, "POST", adyenRoute, { body: adyen })).status).toBe(401);
    expect((await call(payments, "POST", adyenRoute, { body: "{", headers: basic })).status).toBe(
      400,
    );

    const events = { path: `/api/orders/${checkout.json.order_id}/events` };
    expect(
      (await call(api, "GET", "/api/orders/{order_id}/events", { ...events, token: customer }))
        .status,
    ).toBe(200);
    expect(
      (await call(api, "GET", "/api/orders/{order_id}/events", { ...events, token: other })).status,
    ).toBe(404);

    // F1: an order's refunds; a refund of an order that is not paid is 409, a customer's 403.
    const refunds = { path: `/api/orders/${checkout.json.order_id}/refunds` };
    const refundsRoute = "/api/orders/{order_id}/refunds";
    expect((await call(api, "GET", refundsRoute, { ...refunds, token: customer })).status).toBe(
      200,
    );
    expect((await call(api, "GET", refundsRoute, { ...refunds, token: other })).status).toBe(404);
    const refund = { ...refunds, body: { note: "in a test" } };
    expect((await call(api, "POST", refundsRoute, { ...refund, token: admin })).status).toBe(409);
    expect((await call(api, "POST", refundsRoute, { ...refund, token: customer })).status).toBe(
      403,
    );
    expect(
      (await call(api, "POST", refundsRoute, { ...refunds, token: admin, body: {} })).status,
    ).toBe(400);

    // A payment for the order the customer cancelled becomes a review for a person.
    const late = { ...notification, order_id: order.json.order_id, id: unique("evt") };
    late.amount = order.json.amount;
    expect((await call(payments, "POST", webhook, signed(JSON.stringify(late)))).status).toBe(200);
    const reviews = { path: "/api/payment-reviews?status=open&per_page=100", token: admin };
    const review = await eventually(
      async () =>
        (await call(api, "GET", "/api/payment-reviews", reviews)).json.items.find(
          (r: { notification_id: string }) => r.notification_id === late.id,
        ),
      10_000,
      "the review of a payment for a cancelled order",
    );
    expect(
      (
        await call(api, "GET", "/api/payment-reviews/{id}", {
          path: `/api/payment-reviews/${review.id}`,
          token: admin,
        })
      ).status,
    ).toBe(200);
    expect((await call(api, "GET", "/api/payment-reviews", { token: customer })).status).toBe(403);
    const resolve = { path: `/api/payment-reviews/${review.id}/resolve`, token: admin };
    const dismiss = { ...resolve, body: { action: "dismiss", note: "refunded with the provider" } };
    expect((await call(api, "POST", "/api/payment-reviews/{id}/resolve", dismiss)).status).toBe(
      200,
    );
    expect((await call(api, "POST", "/api/payment-reviews/{id}/resolve", dismiss)).status).toBe(
      409,
    );

    // The operator's view of the same payment, on payments (admin token only).
    const stored = { path: `/api/notifications?order_id=${checkout.json.order_id}`, token: admin };
    const listed = await call(payments, "GET", "/api/notifications", stored);
    expect(listed.status).toBe(200);
    expect(listed.json.items.map((n: { id: string }) => n.id)).toContain(notification.id);
    expect(
      (await call(payments, "GET", "/api/notifications", { ...stored, token: customer })).status,
    ).toBe(403);
    expect((await call(payments, "GET", "/api/notifications", { path: stored.path })).status).toBe(
      401,
    );
    const oneNotification = { path: `/api/notifications/${notification.id}`, token: admin };
    expect(
      (await call(payments, "GET", "/api/notifications/{id}", oneNotification)).json.raw_body,
    ).toBe(raw);
    expect(
      (
        await call(payments, "GET", "/api/notifications/{id}", {
          path: "/api/notifications/evt_unknown",
          token: admin,
        })
      ).status,
    ).toBe(404);
    const replayOne = {
      path: `/api/notifications/${notification.id}/replay`,
      token: admin,
      body: { note: "re-drive after restoring the api" },
    };
    expect((await call(payments, "POST", "/api/notifications/{id}/replay", replayOne)).status).toBe(
      202,
    );
    // N10: the outbox rows each service set aside; U3: each service's figures; for an admin.
    for (const [service, url] of [
      [api, "/api/outbox/dead"],
      [payments, "/api/outbox/dead"],
      [api, "/api/status"],
      [payments, "/api/status"],
      // V4, V5: refused notifications and the audit log of replays.
      [payments, "/api/notifications/rejected"],
      [payments, "/api/audit"],
      // B3: the reconciliation runs (the anti-entropy check's, kind inbox).
      [payments, "/api/reconciliation/runs"],
    ] as const) {
      expect((await call(service, "GET", url, { token: admin })).status).toBe(200);
      expect((await call(service, "GET", url, { token: customer })).status).toBe(403);
    }

    // Outgoing webhooks: an endpoint (its name resolves nowhere yet, which is accepted).
    const hooks = "/api/webhook-endpoints";
    const endpoint = endpoints.kept(
      await call(api, "POST", hooks, {
        token: admin,
        body: {
          url: endpoints.url(`https://${unique("h")}.invalid/hook`),
          events: ["orders.paid"],
        },
      }),
    );
    expect(endpoint.status).toBe(201);
    expect(endpoint.headers.get("location")).toBe(`${hooks}/${endpoint.json.id}`);
    const bad = endpoints.kept(
      await call(api, "POST", hooks, { token: admin, body: { url: "x" } }),
    );
    expect(bad.status).toBe(400);
    expect((await call(api, "GET", hooks, { token: admin })).status).toBe(200);
    expect((await call(api, "GET", hooks, { token: customer })).status).toBe(403);
    const hook = { path: `${hooks}/${endpoint.json.id}`, token: admin };
    expect((await call(api, "GET", `${hooks}/{id}`, hook)).status).toBe(200);
    expect(
      (await call(api, "PATCH", `${hooks}/{id}`, { ...hook, body: { description: "warehouse" } }))
        .status,
    ).toBe(200);
    const rotate = { ...hook, path: `${hook.path}/rotate-secret` };
    expect((await call(api, "POST", `${hooks}/{id}/rotate-secret`, rotate)).status).toBe(200);
    const ping = await call(api, "POST", `${hooks}/{id}/test`, {
      ...hook,
      path: `${hook.path}/test`,
    });
    expect(ping.status).toBe(202);
    const log = { ...hook, path: `${hook.path}/deliveries` };
    expect((await call(api, "GET", `${hooks}/{id}/deliveries`, log)).status).toBe(200);
    const delivery = { ...hook, path: `${hook.path}/deliveries/${ping.json.id}` };
    expect(
      (await call(api, "GET", `${hooks}/{id}/deliveries/{delivery_id}`, delivery)).status,
    ).toBe(200);
    const retry = { ...hook, path: `${delivery.path}/retry` };
    expect(
      (await call(api, "POST", `${hooks}/{id}/deliveries/{delivery_id}/retry`, retry)).status,
    ).toBe(202);
    // H3, U7, V5: recovery, an order's deliveries and the audit log.
    const since = { ...hook, body: { since: new Date(Date.now() - 60_000).toISOString() } };
    for (const action of ["replay-missing", "recover"])
      expect(
        (
          await call(api, "POST", `${hooks}/{id}/${action}`, {
            ...since,
            path: `${hook.path}/${action}`,
          })
        ).status,
      ).toBe(202);
    expect(
      (
        await call(api, "GET", "/api/orders/{order_id}/deliveries", {
          ...mine,
          path: `${mine.path}/deliveries`,
          token: admin,
        })
      ).status,
    ).toBe(200);
    expect((await call(api, "GET", "/api/audit", { token: admin })).status).toBe(200);
    // N16: the console's one-time sign-in code, exchanged once.
    const signIn = await call(api, "POST", "/api/console/sign-in-codes", { token: admin });
    expect(signIn.status).toBe(201);
    const code = { body: { code: (signIn.json as { code: string }).code } };
    expect((await call(api, "POST", "/console/session", code)).status).toBe(200);
    expect((await call(api, "POST", "/console/session", code)).status).toBe(401);
    expect((await call(api, "DELETE", `${hooks}/{id}`, hook)).status).toBe(204);
    expect((await call(api, "GET", `${hooks}/{id}`, hook)).status).toBe(404);

    // Every documented operation was called at least once.
    const documented = Object.entries(documents).flatMap(([service, document]) =>
      Object.entries(document.paths).flatMap(([path, methods]) =>
        Object.keys(methods as object).map(
          (method) => `${service} ${method.toUpperCase()} ${path}`,
        ),
      ),
    );
    expect(documented.filter((operation) => !seen.has(operation))).toEqual([]);
  });

  test("D4: rate-limited routes carry RateLimit-Policy and RateLimit; the probes do not", async () => {
    const answer = await fetch(`${stack.api.url}/api/cart`, {
      headers: { authorization: `Bearer ${stack.customer}` },
    });
    expect(answer.headers.get("ratelimit-policy")).toBe('"default";q=2000;w=2');
    expect(answer.headers.get("ratelimit")).toMatch(/^"default";r=\d+;t=\d+$/);
    expect((await fetch(`${stack.api.url}/health`)).headers.get("ratelimit")).toBeNull();
  });
});

describe("Swagger UI with no internet access", () => {
  test.each(["api", "payments"] as const)(
    "D2: the %s's /swagger and /swagger/ name no other host, and every asset they name loads",
    async (name) => {
      const service = stack[name];
      for (const page of ["/swagger", "/swagger/"]) {
        const answer = await fetch(`${service.url}${page}`);
        expect(answer.status).toBe(200);
        expect(answer.headers.get("content-type")).toStartWith("text/html");
        const html = await answer.text();
        expect(html).not.toMatch(/\/\/[a-z0-9.-]+\.[a-z]{2,}/i);
        const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]);
        expect(assets.length).toBeGreaterThanOrEqual(4);
        const types: Record<string, string> = {
          js: "text/javascript",
          css: "text/css",
          png: "image/png",
        };
        for (const asset of assets) {
          expect(asset).toStartWith("/");
          const loaded = await fetch(new URL(asset, `${service.url}${page}`));
          expect(loaded.status).toBe(200);
          expect(loaded.headers.get("content-type")).toStartWith(
            types[asset.split(".").pop() ?? ""],
          );
          expect((await loaded.arrayBuffer()).byteLength).toBeGreaterThan(100);
        }
        const init = await (
          await fetch(`${service.url}/swagger/assets/swagger-initializer.js`)
        ).text();
        expect(init).toContain('url: "/swagger/json"');
        expect(init).toContain("validatorUrl: null");
      }
    },
  );
});

describe("the document as a client generator reads it", () => {
  const operations = (document: Json) =>
    Object.entries(document.paths as Json).flatMap(([path, methods]) =>
      Object.entries(methods as Json).map(([method, operation]) => ({
        path,
        method,
        operation: operation as Json,
      })),
    );
  /** Every schema under a response or request body, however deep, that is written out inline. */
  const inlineObjects = (node: unknown, at: string, found: string[] = []): string[] => {
    if (typeof node !== "object" || node === null) return found;
    const schema = node as Json;
    if (schema.type === "object" && schema.properties && Object.keys(schema.properties).length > 2)
      found.push(at);
    for (const [key, value] of Object.entries(schema)) inlineObjects(value, `${at}/${key}`, found);
    return found;
  };

  test.each([
    [
      "api",
      [
        "Product",
        "ProductPage",
        "Order",
        "OrderItem",
        "OrderPage",
        "CartItem",
        "Cart",
        "TimelineEntry",
        "Timeline",
        "PaymentReview",
        "PaymentReviewPage",
        "OneLineOrder",
        "OrderOfItems",
        "ApiStatus",
      ],
    ],
    [
      "payments",
      [
        "Notification",
        "NotificationDetail",
        "NotificationPage",
        "PaymentNotification",
        "PaymentsStatus",
      ],
    ],
  ] as const)(
    "D5: every %s resource is a named component schema, used by $ref",
    (name, expected) => {
      const document = documents[name];
      for (const schema of expected)
        expect(Object.keys(document.components.schemas)).toContain(schema);
      const inline = operations(document).flatMap(({ path, method, operation }) =>
        inlineObjects(
          { responses: operation.responses, body: operation.requestBody },
          `${method} ${path}`,
        ),
      );
      expect(inline).toEqual([]);
      if (name === "api") {
        const order = document.paths["/api/orders/{order_id}"].get.responses["200"];
        expect(order.content["application/json"].schema).toEqual({
          $ref: "#/components/schemas/Order",
        });
        expect(document.components.schemas.OrderPage.properties.items.items).toEqual({
          $ref: "#/components/schemas/Order",
        });
        expect(JSON.stringify(document)).not.toContain("x-component");
      }
    },
  );

  test("D5: POST /api/orders is one of its two shapes, so {} fails against the document; checkout's body is optional", () => {
    const document = documents.api;
    const body = document.paths["/api/orders"].post.requestBody;
    expect(body.required).toBe(true);
    const schema = resolve(document, body.content["application/json"].schema) as Json;
    expect(schema.oneOf).toHaveLength(2);
    const validate = ajv.compile(schema);
    expect(validate({})).toBe(false);
    expect(validate({ product_id: 1, qty: 2 })).toBe(true);
    expect(validate({ items: [{ product_id: 1, qty: 2 }] })).toBe(true);
    expect(validate({ product_id: 1, qty: 2, items: [{ product_id: 1, qty: 2 }] })).toBe(false);
    const checkout = document.paths["/api/cart/checkout"].post.requestBody;
    expect(checkout.required).toBe(false);
    const empty = ajv.compile(
      resolve(document, checkout.content["application/json"].schema) as Json,
    );
    expect([empty({}), empty(7), empty({ a: 1 })]).toEqual([true, false, false]);
  });

  test.each(["api", "payments"] as const)(
    "D5: every %s operation has a stable camelCase operationId named for what it does; tags are described",
    (name) => {
      const document = documents[name];
      const ids = operations(document).map(({ operation }) => operation.operationId);
      for (const id of ids) expect(id).toMatch(/^[a-z]+(?:[A-Z][a-z]+)*$/);
      expect(new Set(ids).size).toBe(ids.length);
      const expected =
        name === "api"
          ? [
              "listProducts",
              "getOrder",
              "createOrder",
              "checkoutCart",
              "resolvePaymentReview",
              "getApiStatus",
            ]
          : [
              "receivePaymentNotification",
              "listNotifications",
              "replayNotification",
              "getPaymentsStatus",
            ];
      for (const id of expected) expect(ids).toContain(id);
      const used = new Set(operations(document).flatMap(({ operation }) => operation.tags ?? []));
      const described = Object.fromEntries(
        (document.tags ?? []).map((tag: Json) => [tag.name, tag.description]),
      );
      for (const tag of used) expect(described[tag]?.length ?? 0).toBeGreaterThan(10);
    },
  );

  test.each(["api", "payments"] as const)(
    "D5: %s documents /ready's 503, and its main resources carry examples that match their schemas",
    (name) => {
      const document = documents[name];
      expect(document.paths["/ready"].get.responses["503"]).toBeDefined();
      const resources =
        name === "api"
          ? [
              "Product",
              "Order",
              "CartItem",
              "PaymentReview",
              "TimelineEntry",
              "OrderPage",
              "ApiStatus",
            ]
          : ["Notification", "NotificationDetail", "NotificationPage", "PaymentsStatus"];
      for (const resource of resources) {
        const schema = document.components.schemas[resource];
        expect(schema.examples?.length ?? 0).toBeGreaterThan(0);
        const { examples, ...rest } = resolve(document, schema) as Json;
        const validate = ajv.compile(rest);
        for (const example of examples) expect(validate(example)).toBe(true);
      }
    },
  );
});

describe("E6 (v5): what the api refuses, its document refuses too", () => {
  /** The request body schema of an operation, references resolved, compiled. */
  const bodySchema = (path: string, method: string) => {
    const document = documents.api;
    const body = document.paths[path][method].requestBody;
    return ajv.compile(resolve(document, body.content["application/json"].schema) as Json);
  };

  test("E6 (v5): a move without its note, a note alone on an endpoint and a sign-in with more than its code fail the document as they fail the server (400)", async () => {
    const { api, admin } = stack;
    const order = await stack.newOrder();
    const move = bodySchema("/api/orders/{order_id}", "patch");
    expect(move({ status: "paid" })).toBe(false);
    expect(move({ status: "refunded", note: "Refunded by hand" })).toBe(true);
    expect(move({ status: "cancelled" })).toBe(true);
    const moved = await call(api, "PATCH", "/api/orders/{order_id}", {
      path: `/api/orders/${order.order_id}`,
      token: admin,
      body: { status: "paid" },
    });
    expect({ status: moved.status, path: moved.json.errors?.[0]?.path }).toEqual({
      status: 400,
      path: "/note",
    });

    const change = bodySchema("/api/webhook-endpoints/{id}", "patch");
    expect(change({ note: "Only a note" })).toBe(false);
    expect(change({ status: "disabled", note: "Down for maintenance" })).toBe(true);
    expect(change({ status: "disabled" })).toBe(true);
    const noteAlone = await call(api, "PATCH", "/api/webhook-endpoints/{id}", {
      path: "/api/webhook-endpoints/2147483647",
      token: admin,
      body: { note: "Only a note" },
    });
    expect({ status: noteAlone.status, path: noteAlone.json.errors?.[0]?.path }).toEqual({
      status: 400,
      path: "/note",
    });

    const session = bodySchema("/console/session", "post");
    expect(session({ code: "abc" })).toBe(true);
    expect(session({ code: "abc", admin: true })).toBe(false);
    expect(
      (await call(api, "POST", "/console/session", { body: { code: "abc", admin: true } })).status,
    ).toBe(400);
  });

  test("E6 (v5): /console/session documents its 413 and 415, and answers them as documented", async () => {
    const { api } = stack;
    const responses = documents.api.paths["/console/session"].post.responses;
    expect(Object.keys(responses)).toEqual(expect.arrayContaining(["400", "401", "413", "415"]));
    // `call` checks each answer against the documented status, headers and body.
    const tooLarge = await call(api, "POST", "/console/session", {
      body: { code: "x".repeat(20 * 1024) },
    });
    expect(tooLarge.status).toBe(413);
    const notJson = await call(api, "POST", "/console/session", {
      body: "code=abc",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(notJson.status).toBe(415);
  });

  test("E6 (v5): since, at most 30 days back, says so in its schema; 31 days back is 400", async () => {
    const { api, admin } = stack;
    for (const action of ["replay-missing", "recover"]) {
      const path = `/api/webhook-endpoints/{id}/${action}`;
      const body = resolve(
        documents.api,
        documents.api.paths[path].post.requestBody.content["application/json"].schema,
      ) as Json;
      expect(body.properties.since).toMatchObject({ type: "string", format: "date-time" });
      expect(body.properties.since.description).toContain("at most 30 days before the request");
      const old = await call(api, "POST", path, {
        path: `/api/webhook-endpoints/2147483647/${action}`,
        token: admin,
        body: { since: new Date(Date.now() - 31 * 86_400_000).toISOString() },
      });
      expect({ action, status: old.status, path: old.json.errors?.[0]?.path }).toEqual({
        action,
        status: 400,
        path: "/since",
      });
    }
  });
});

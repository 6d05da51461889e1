/**
 * Hostile requests against the API surface, each as an attacker would send it: live requests to
 * listening services. N8 (no defaulted required field), V2 (a different amount needs
 * accept_amount), N9 (clean text), C4 (checkout's body), D3 (encoded path parameters), N13
 * (Swagger UI's headers). First found by the third security review (issue 23).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { apiClient } from "@commerce/client";
import { signPayload } from "@commerce/shared/contract/signature";
import { paymentMessageFor, unique, webhookSecret } from "@commerce/testing/basics";
import {
  type ApiHarness,
  type PaymentsHarness,
  startApi,
  startPayments,
} from "@commerce/testing/in-process";
import { applyPaymentMessage } from "../../services/api/src/modules/payment-inbox/apply";

setDefaultTimeout(60_000);

let api: ApiHarness;
let payments: PaymentsHarness;
let paymentsApp: ReturnType<PaymentsHarness["app"]>;
let apiUrl: string;
let paymentsUrl: string;
let admin: string;

beforeAll(async () => {
  [api, payments] = await Promise.all([startApi(), startPayments()]);
  api.app.listen({ port: 0, hostname: "127.0.0.1" });
  paymentsApp = payments.app();
  paymentsApp.listen({ port: 0, hostname: "127.0.0.1" });
  apiUrl = `http://127.0.0.1:${api.app.server?.port}`;
  paymentsUrl = `http://127.0.0.1:${paymentsApp.server?.port}`;
  admin = await api.admin();
});
afterAll(async () => {
  await paymentsApp?.stop();
  await Promise.all([api?.close(), payments?.close()]);
});

type Sent = { status: number; text: string; json: any; headers: Headers };

/** A request over the network, as curl would send it: the body as given, bytes and all. */
async function send(
  base: string,
  method: string,
  path: string,
  {
    token,
    body,
    headers = {},
  }: { token?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<Sent> {
  const h: Record<string, string> = { ...headers };
  if (token) h.authorization = `Bearer ${token}`;
  if (body !== undefined) h["content-type"] ??= "application/json";
  const response = await fetch(`${base}${path}`, { method, headers: h, body });
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: response.status, text, json, headers: response.headers };
}

const apiSend = (method: string, path: string, options?: Parameters<typeof send>[3]) =>
  send(apiUrl, method, path, options);

async function placedOrder(price: number, stock: number | null = null) {
  const product = await api.product({ price });
  if (stock !== null)
    await apiSend("PATCH", `/api/products/${product.id}`, {
      token: admin,
      body: JSON.stringify({ stock }),
    });
  const customer = await api.customer();
  const res = await apiSend("POST", "/api/orders", {
    token: customer.token,
    body: JSON.stringify({ product_id: product.id, qty: 1 }),
  });
  expect(res.status).toBe(201);
  return {
    product,
    customer,
    order: res.json as { order_id: number; amount: number; currency: string },
  };
}

const reviewOf = async (notificationId: string) =>
  Number(
    (await api.sql`select id from api.payment_reviews where notification_id = ${notificationId}`)[0]
      .id,
  );
const orderStatus = async (orderId: number) =>
  (await apiSend("GET", `/api/orders/${orderId}`, { token: admin })).json.status;

type Schema = Record<string, any>;

/** Every `default` in a schema, with where it is and whether its property is required. */
function defaultsIn(
  schema: unknown,
  at = "",
  required = false,
): { at: string; required: boolean }[] {
  if (typeof schema !== "object" || schema === null) return [];
  const node = schema as Schema;
  const found = "default" in node ? [{ at: at || "(root)", required }] : [];
  for (const [name, child] of Object.entries(node.properties ?? {}))
    found.push(...defaultsIn(child, `${at}/${name}`, (node.required ?? []).includes(name)));
  for (const key of ["anyOf", "oneOf", "allOf"])
    for (const branch of node[key] ?? []) found.push(...defaultsIn(branch, at, required));
  if (node.items) found.push(...defaultsIn(node.items, `${at}/*`, false));
  return found;
}

type Route = { method: string; path: string; hooks: Schema };
const routesOf = (): { service: string; route: Route }[] => [
  ...(api.app.routes as unknown as Route[]).map((route) => ({ service: "api", route })),
  ...(paymentsApp.routes as unknown as Route[]).map((route) => ({ service: "payments", route })),
];

describe("N8: a required field is never defaulted", () => {
  test("N8: no request schema of either service defaults a body, path or header field, nor a required or non-paging query field", () => {
    const offending: string[] = [];
    let walked = 0;
    for (const { service, route } of routesOf())
      for (const part of ["body", "params", "headers", "query"] as const) {
        const schema = route.hooks?.[part];
        if (!schema) continue;
        walked++;
        for (const { at, required } of defaultsIn(schema)) {
          // Only page and per_page, both optional, say what an absent one means.
          const paging = part === "query" && !required && ["/page", "/per_page"].includes(at);
          if (!paging) offending.push(`${service} ${route.method} ${route.path} ${part} ${at}`);
        }
      }
    expect(walked).toBeGreaterThan(15);
    expect(offending).toEqual([]);
  });

  test("N8: neither served document gives a request body field, a path or a header parameter a default", async () => {
    const offending: string[] = [];
    for (const base of [apiUrl, paymentsUrl]) {
      const document = (await send(base, "GET", "/swagger/json")).json;
      const schemas = document.components.schemas;
      const resolved = (node: unknown, seen = new Set<string>()): unknown => {
        if (typeof node !== "object" || node === null) return node;
        if (Array.isArray(node)) return node.map((item) => resolved(item, seen));
        const { $ref, ...rest } = node as Schema;
        if (typeof $ref === "string") {
          const name = $ref.split("/").pop() as string;
          return seen.has(name) ? {} : resolved(schemas[name], new Set([...seen, name]));
        }
        return Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, resolved(v, seen)]));
      };
      for (const [path, methods] of Object.entries<Schema>(document.paths))
        for (const [method, operation] of Object.entries<Schema>(methods)) {
          const body = operation.requestBody?.content?.["application/json"]?.schema;
          for (const { at } of defaultsIn(resolved(body)))
            offending.push(`${base} ${method} ${path} body ${at}`);
          for (const parameter of operation.parameters ?? [])
            if (parameter.in !== "query" && "default" in parameter.schema)
              offending.push(`${base} ${method} ${path} ${parameter.in} ${parameter.name}`);
        }
    }
    expect(offending).toEqual([]);
  });

  test('N8: POST /api/payment-reviews/{id}/resolve {"note":"x"} without action is 400 and a cancelled order stays cancelled', async () => {
    const { customer, order } = await placedOrder(750, 5);
    await apiSend("PATCH", `/api/orders/${order.order_id}`, {
      token: customer.token,
      body: JSON.stringify({ status: "cancelled" }),
    });
    const m = paymentMessageFor(order);
    expect(await applyPaymentMessage(api.db, api.deps.topology, "succeeded", m)).toBe(
      "order_not_payable",
    );
    const id = await reviewOf(m.notification_id);
    const res = await apiSend("POST", `/api/payment-reviews/${id}/resolve`, {
      token: admin,
      body: '{"note":"x"}',
    });
    expect(res.status).toBe(400);
    expect(res.json.errors.map((e: { path: string }) => e.path)).toContain("/action");
    expect(await orderStatus(order.order_id)).toBe("cancelled");
    const review = await apiSend("GET", `/api/payment-reviews/${id}`, { token: admin });
    expect(review.json.status).toBe("open");
  });
});

describe("V2: applying a different amount needs accept_amount", () => {
  test("V2: 1 cent of a 750 USD order cannot pay it by apply; the review shows what was expected", async () => {
    const { order } = await placedOrder(75_000);
    const m = paymentMessageFor(order, { amount: 1 });
    expect(await applyPaymentMessage(api.db, api.deps.topology, "succeeded", m)).toBe("mismatch");
    const id = await reviewOf(m.notification_id);
    const review = await apiSend("GET", `/api/payment-reviews/${id}`, { token: admin });
    expect(review.json).toMatchObject({
      reason: "mismatch",
      amount: 1,
      currency: order.currency,
      expected_amount: 75_000,
      expected_currency: order.currency,
    });
    const listed = await apiSend("GET", "/api/payment-reviews?status=open&per_page=100", {
      token: admin,
    });
    expect(listed.json.items.find((r: { id: number }) => r.id === id)).toMatchObject({
      expected_amount: 75_000,
    });

    const apply = await apiSend("POST", `/api/payment-reviews/${id}/resolve`, {
      token: admin,
      body: '{"action":"apply","note":"customer says they paid"}',
    });
    expect(apply.status).toBe(409);
    expect(apply.json.detail).toContain("accept_amount");
    expect(await orderStatus(order.order_id)).toBe("created");
    for (const accept of ["false", '"true"', "1"]) {
      const res = await apiSend("POST", `/api/payment-reviews/${id}/resolve`, {
        token: admin,
        body: `{"action":"apply","note":"x","accept_amount":${accept}}`,
      });
      expect(res.status).toBe(accept === "false" ? 409 : 400);
    }
    expect(await orderStatus(order.order_id)).toBe("created");

    const accepted = await apiSend("POST", `/api/payment-reviews/${id}/resolve`, {
      token: admin,
      body: '{"action":"apply","note":"the rest came by bank transfer","accept_amount":true}',
    });
    expect(accepted.status).toBe(200);
    expect(accepted.json).toMatchObject({ resolution: "applied", expected_amount: 75_000 });
    expect(await orderStatus(order.order_id)).toBe("paid");
  });

  test("V2: a partial refund is applied only with accept_amount; a review of an unknown order expects nothing", async () => {
    const { order } = await placedOrder(75_000);
    await applyPaymentMessage(api.db, api.deps.topology, "succeeded", paymentMessageFor(order));
    const refund = paymentMessageFor(order, { amount: 100 });
    expect(await applyPaymentMessage(api.db, api.deps.topology, "refunded", refund)).toBe(
      "partial_refund",
    );
    const id = await reviewOf(refund.notification_id);
    const plain = await apiSend("POST", `/api/payment-reviews/${id}/resolve`, {
      token: admin,
      body: '{"action":"apply","note":"x"}',
    });
    expect(plain.status).toBe(409);
    expect(await orderStatus(order.order_id)).toBe("paid");

    const ghost = paymentMessageFor({ ...order, order_id: 8_100_000_000_000 + Date.now() });
    await applyPaymentMessage(api.db, api.deps.topology, "succeeded", ghost);
    const unknown = await apiSend(
      "GET",
      `/api/payment-reviews/${await reviewOf(ghost.notification_id)}`,
      {
        token: admin,
      },
    );
    expect(unknown.json).toMatchObject({ expected_amount: null, expected_currency: null });
  });
});

describe("N9: clean text on every route", () => {
  const dirty = ["a%00b", "%ED%A0%80", "a%0Ab", "a%1B", "a%7F", "a%C2%85"];

  test("N9: NUL, a lone surrogate or a control character in any route's path or query string is 400, on both services", async () => {
    const paymentsToken = api.admin(); // the same secret signs both services' tokens
    const failures: string[] = [];
    for (const { service, route } of routesOf()) {
      if (route.method === "ALL" || route.path.includes("*")) continue;
      const base = service === "api" ? apiUrl : paymentsUrl;
      const token = await paymentsToken;
      for (const bad of dirty) {
        const cleanPath = route.path.replace(/:[a-z_]+/g, "1");
        const requests = [`${cleanPath}?x=${bad}`, `${cleanPath}?${bad}=1`];
        if (route.path.includes(":")) requests.push(route.path.replace(/:[a-z_]+/g, bad));
        for (const path of requests) {
          const res = await send(base, route.method, path, { token });
          if (res.status !== 400 || !res.headers.get("content-type")?.includes("problem+json"))
            failures.push(`${service} ${route.method} ${path}: ${res.status}`);
        }
      }
    }
    expect(failures).toEqual([]);
  });

  test("N9: NUL in operator query or path text on payments is 400, not 500 (SQLSTATE 22021)", async () => {
    const token = await api.admin();
    for (const path of [
      "/api/notifications?event=payment.succeeded%00",
      "/api/notifications/evt_%00",
      "/api/notifications/evt_%00/replay",
    ]) {
      const res = await send(paymentsUrl, path.endsWith("replay") ? "POST" : "GET", path, {
        token,
      });
      expect(res.status).toBe(400);
    }
    // The SQLSTATE as a log field: "22021" alone also turns up, now and then, inside a random
    // hex request, trace or span id.
    const codes = payments.logLines.map((line) => JSON.parse(line).error_code);
    expect(codes).not.toContain("22021");
  });

  test("N9: NUL, lone surrogates and control characters in any api body text are 400", async () => {
    const customer = await api.customer();
    const product = await api.product();
    const bodies = [
      '{"name":"Mug\\u0000","price":1,"category":"c"}',
      '{"name":"Mug\\ud800","price":1,"category":"c"}',
      '{"name":"Mug\\u001b[31m","price":1,"category":"c"}',
      '{"name":"Mug\\nline","price":1,"category":"c"}',
      '{"name":"Mug","price":1,"category":"c","x\\u0000":1}',
    ];
    for (const body of bodies)
      expect((await apiSend("POST", "/api/products", { token: admin, body })).status).toBe(400);
    for (const body of ['{"qty":1,"note":"\\u0000"}', '{"qty":1,"\\u0007":1}'])
      expect(
        (await apiSend("PUT", `/api/cart/items/${product.id}`, { token: customer.token, body }))
          .status,
      ).toBe(400);
    // Multi-line text (a review's note) keeps tab, line feed and carriage return, nothing else.
    const { order } = await placedOrder(500);
    const m = paymentMessageFor(order, { currency: "EUR" });
    await applyPaymentMessage(api.db, api.deps.topology, "succeeded", m);
    const id = await reviewOf(m.notification_id);
    const resolve = (note: string) =>
      apiSend("POST", `/api/payment-reviews/${id}/resolve`, {
        token: admin,
        body: JSON.stringify({ action: "dismiss", note }),
      });
    expect((await resolve("bell\u0007")).status).toBe(400);
    expect((await resolve("first\u0000")).status).toBe(400);
    expect((await resolve("line one\r\n\tline two")).status).toBe(200);
  });

  test("N9: the webhook refuses control characters in event, signed or not", async () => {
    const raw = JSON.stringify({
      event: "payment.succeeded\u0007",
      order_id: 1,
      amount: 1,
      currency: "USD",
      id: unique("evt"),
    });
    const res = await send(paymentsUrl, "POST", "/api/webhooks/payment", {
      body: raw,
      headers: { "x-signature": signPayload(raw, webhookSecret, Math.floor(Date.now() / 1000)) },
    });
    expect(res.status).toBe(400);
  });

  test("N9: lengths count characters: a 200-character emoji name is accepted, 201 refused; 100 emoji fit an event filter", async () => {
    const create = (name: string) =>
      apiSend("POST", "/api/products", {
        token: admin,
        body: JSON.stringify({ name, price: 1, category: unique("cat") }),
      });
    const emoji101 = await create("\u{1F600}".repeat(101));
    expect(emoji101.status).toBe(201);
    expect(emoji101.json.name).toBe("\u{1F600}".repeat(101));
    expect((await create("\u{1F600}".repeat(200))).status).toBe(201);
    expect((await create("\u{1F600}".repeat(201))).status).toBe(400);
    expect((await create("x".repeat(201))).status).toBe(400);
    const token = await api.admin();
    const event = encodeURIComponent("\u{1F4B8}".repeat(100));
    expect(
      (await send(paymentsUrl, "GET", `/api/notifications?event=${event}`, { token })).status,
    ).toBe(200);
    const signed = (event: string) => {
      const raw = JSON.stringify({
        event,
        order_id: 1,
        amount: 1,
        currency: "USD",
        id: unique("evt"),
      });
      return send(paymentsUrl, "POST", "/api/webhooks/payment", {
        body: raw,
        headers: { "x-signature": signPayload(raw, webhookSecret, Math.floor(Date.now() / 1000)) },
      });
    };
    expect((await signed("\u{1F4B8}".repeat(100))).status).toBe(200);
    expect((await signed("\u{1F4B8}".repeat(101))).status).toBe(400);
    const tooLong = encodeURIComponent("\u{1F4B8}".repeat(101));
    expect(
      (await send(paymentsUrl, "GET", `/api/notifications?event=${tooLong}`, { token })).status,
    ).toBe(400);
  });
});

describe("C4: checkout takes no body or {}", () => {
  test("C4: a checkout body of 7 (or any JSON but {}) is 400 and the cart is kept", async () => {
    const customer = await api.customer();
    const product = await api.product({ price: 300 });
    await apiSend("PUT", `/api/cart/items/${product.id}`, {
      token: customer.token,
      body: '{"qty":2}',
    });
    for (const body of ["7", '"x"', "[]", "null", "true", '{"a":1}']) {
      const res = await apiSend("POST", "/api/cart/checkout", { token: customer.token, body });
      expect(`${body}: ${res.status}`).toBe(`${body}: 400`);
    }
    const cart = await apiSend("GET", "/api/cart", { token: customer.token });
    expect(cart.json.items).toHaveLength(1);
    expect(
      (await apiSend("POST", "/api/cart/checkout", { token: customer.token, body: "{}" })).status,
    ).toBe(201);
    await apiSend("PUT", `/api/cart/items/${product.id}`, {
      token: customer.token,
      body: '{"qty":1}',
    });
    expect((await apiSend("POST", "/api/cart/checkout", { token: customer.token })).status).toBe(
      201,
    );
  });
});

describe("D3: the typed client encodes path parameters", () => {
  test('D3: orders({ order_id: "21/../../cart" }) does not read the cart', async () => {
    const customer = await api.customer();
    const product = await api.product();
    await apiSend("PUT", `/api/cart/items/${product.id}`, {
      token: customer.token,
      body: '{"qty":1}',
    });
    const client = apiClient(apiUrl, customer.token);
    // The attack passes text where the type says a number.
    const traversal = await client.api.orders({ order_id: "21/../../cart" as any }).get();
    expect(traversal.status).toBe(400);
    expect(JSON.stringify(traversal.data ?? null)).not.toContain("items");
    const placed = await client.api.orders.post({ product_id: product.id, qty: 1 });
    expect(placed.status).toBe(201);
    const read = await client.api.orders({ order_id: placed.data?.order_id ?? 0 }).get();
    expect(read.status).toBe(200);
    const cart = await client.api.cart.items({ product_id: product.id }).put({ qty: 3 });
    expect(cart.status).toBe(200);
  });

  test('D3: a path parameter of ".", ".." or "" is refused by the client, never sent to another route', async () => {
    const customer = await api.customer();
    const client = apiClient(apiUrl, customer.token);
    for (const id of [".", "..", ""])
      expect(() => client.api.orders({ order_id: id as any })).toThrow(TypeError);
  });
});

describe("N13: Swagger UI is not framed, sniffed or remembered", () => {
  test("N13: /swagger pages carry a CSP with frame-ancestors 'none' and nosniff, and keep no token in localStorage", async () => {
    for (const base of [apiUrl, paymentsUrl])
      for (const path of [
        "/swagger",
        "/swagger/",
        "/swagger/assets/swagger-initializer.js",
        "/swagger/assets/swagger-ui-bundle.js",
        "/swagger/assets/swagger-ui.css",
      ]) {
        const res = await send(base, "GET", path);
        expect(res.status).toBe(200);
        const csp = res.headers.get("content-security-policy") ?? "";
        expect(csp).toContain("frame-ancestors 'none'");
        expect(csp).toContain("script-src 'self'");
        expect(csp).not.toContain("unsafe-eval");
        expect(res.headers.get("x-content-type-options")).toBe("nosniff");
        expect(res.headers.get("x-frame-options")).toBe("DENY");
      }
    const script = (await send(apiUrl, "GET", "/swagger/assets/swagger-initializer.js")).text;
    expect(script).not.toContain("persistAuthorization: true");
  });
});

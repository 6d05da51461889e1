import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { isCleanText } from "@commerce/shared/platform/http/fields";
import { token } from "@commerce/testing/basics";
import { type ApiHarness, startApi } from "@commerce/testing/in-process";
import { privateDatabase } from "@commerce/testing/private-database";
import fc from "fast-check";
import {
  badIdSegment,
  brokenBody,
  expectWellFormed,
  headerValue,
  hostileObjectText,
  numRuns,
  oddContentType,
  RowWatch,
} from "./support";

setDefaultTimeout(120_000);

let database: Awaited<ReturnType<typeof privateDatabase>>;
let api: ApiHarness;
let rows: RowWatch;
let admin: string;
let customer: string;
let productId: number;
let orderId: number;

beforeAll(async () => {
  database = await privateDatabase();
  api = await startApi({ env: { DATABASE_URL: database.url } });
  admin = await token({ sub: "hostile-admin", scope: "admin" });
  customer = await token({ sub: "hostile-customer" });
  productId = (await api.product({ price: 250 })).id;
  orderId = (
    await api.call("POST", "/api/orders", {
      token: customer,
      body: { product_id: productId, qty: 2 },
    })
  ).json.order_id;
  await api.call("PUT", `/api/cart/items/${productId}`, { token: customer, body: { qty: 1 } });
  rows = new RowWatch(database.sql, "api");
  await rows.start();
});
afterAll(async () => {
  await api?.close();
  await database?.drop();
});

/** One request as a client would send it: raw bytes, a declared length, any headers. */
async function send(
  method: string,
  path: string,
  {
    auth,
    body,
    headers = {},
  }: { auth?: string; body?: Uint8Array | string; headers?: Record<string, string> },
) {
  const h: Record<string, string> = { ...headers };
  if (auth) h.authorization = `Bearer ${auth}`;
  if (body !== undefined) {
    h["content-type"] ??= "application/json";
    h["content-length"] ??= String(
      typeof body === "string" ? Buffer.byteLength(body) : body.byteLength,
    );
  }
  return api.app.handle(new Request(`http://localhost${path}`, { method, headers: h, body }));
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const onlyKeys = (v: Record<string, unknown>, allowed: string[]) =>
  Object.keys(v).every((k) => allowed.includes(k));
const int = (v: unknown, min: number, max: number) =>
  Number.isInteger(v) && (v as number) >= min && (v as number) <= max;
/** N9: well-formed text without control characters, its length counted in code points. */
const text = (v: unknown, min: number, max: number) =>
  typeof v === "string" && [...v].length >= min && [...v].length <= max && isCleanText(v);

const productFields: Record<string, (v: unknown) => boolean> = {
  name: (v) => text(v, 1, 200),
  price: (v) => int(v, 0, 100_000_000),
  category: (v) => text(v, 1, 100),
};
const fieldsValid = (v: Record<string, unknown>, fields: Record<string, (v: unknown) => boolean>) =>
  Object.entries(v).every(([k, value]) => fields[k]?.(value));

/** Every route that takes a body, with the contract's own rule for a valid one (P3, R1, R4, C2). */
const bodyRoutes = [
  {
    name: "P3: POST /api/products",
    method: "POST",
    path: () => "/api/products",
    auth: () => admin,
    keys: ["name", "price", "category"],
    valid: (v: unknown) =>
      isObject(v) &&
      Object.keys(v).length === 3 &&
      onlyKeys(v, ["name", "price", "category"]) &&
      fieldsValid(v, productFields),
    example: '{"name":"Mug","price":1299,"category":"kitchen"}',
  },
  {
    name: "P3: PATCH /api/products/{id}",
    method: "PATCH",
    path: () => `/api/products/${productId}`,
    auth: () => admin,
    keys: ["name", "price", "category"],
    valid: (v: unknown) =>
      isObject(v) &&
      Object.keys(v).length > 0 &&
      onlyKeys(v, ["name", "price", "category"]) &&
      fieldsValid(v, productFields),
    example: '{"name":"Mug","price":1299}',
  },
  {
    name: "R1: POST /api/orders",
    method: "POST",
    path: () => "/api/orders",
    auth: () => customer,
    keys: ["product_id", "qty"],
    valid: (v: unknown) =>
      isObject(v) &&
      Object.keys(v).length === 2 &&
      int(v.product_id, 1, 2_147_483_647) &&
      int(v.qty, 1, 1000),
    example: '{"product_id":1,"qty":2}',
  },
  {
    name: "R4: PATCH /api/orders/{id}",
    method: "PATCH",
    path: () => `/api/orders/${orderId}`,
    auth: () => admin,
    keys: ["status"],
    valid: (v: unknown) => isObject(v) && Object.keys(v).length === 1 && v.status === "paid",
    example: '{"status":"paid"}',
  },
  {
    name: "C2: PUT /api/cart/items/{id}",
    method: "PUT",
    path: () => `/api/cart/items/${productId}`,
    auth: () => customer,
    keys: ["qty"],
    valid: (v: unknown) => isObject(v) && Object.keys(v).length === 1 && int(v.qty, 1, 1000),
    example: '{"qty":3}',
  },
];

/** Every route and method, for path, query and header garbage. */
const everyRoute: Array<[method: string, path: (id: string) => string, auth: () => string]> = [
  ["GET", () => "/api/products", () => customer],
  ["GET", (id) => `/api/products/${id}`, () => customer],
  ["PATCH", (id) => `/api/products/${id}`, () => admin],
  ["GET", () => "/api/orders", () => customer],
  ["GET", (id) => `/api/orders/${id}`, () => customer],
  ["PATCH", (id) => `/api/orders/${id}`, () => admin],
  ["GET", () => "/api/cart", () => customer],
  ["PUT", (id) => `/api/cart/items/${id}`, () => customer],
  ["DELETE", (id) => `/api/cart/items/${id}`, () => customer],
  ["POST", () => "/api/products", () => admin],
  ["POST", () => "/api/orders", () => customer],
  ["GET", () => "/health", () => customer],
  ["GET", () => "/ready", () => customer],
  ["GET", () => "/metrics", () => customer],
  ["GET", () => "/swagger/json", () => customer],
];

describe("api: hostile input, property-based", () => {
  for (const route of bodyRoutes)
    test(`${route.name}, E1-E3: random and boundary JSON is never a 5xx, a 2xx only when valid, and a rejection changes no row`, async () => {
      await fc.assert(
        fc.asyncProperty(hostileObjectText(route.keys, route.example), async (body) => {
          const response = await send(route.method, route.path(), { auth: route.auth(), body });
          await rows.after(response.status);
          await expectWellFormed(response);
          if (!route.valid(JSON.parse(body))) expect(response.status).toBeGreaterThanOrEqual(400);
        }),
        { numRuns },
      );
    });

  test("E3: broken, nested, oversized and non-UTF-8 bodies are 400 or 413 and change no row", async () => {
    const routeAndBody = fc
      .constantFrom(...bodyRoutes)
      .chain((route) => brokenBody(route.example, 16 * 1024).map((body) => ({ route, body })));
    await fc.assert(
      fc.asyncProperty(routeAndBody, async ({ route, body }) => {
        const response = await send(route.method, route.path(), { auth: route.auth(), body });
        await rows.after(response.status);
        await expectWellFormed(response);
        expect([400, 413]).toContain(response.status);
      }),
      { numRuns },
    );
  });

  test("E3: a body with any other media type is 415 and changes no row", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...bodyRoutes),
        oddContentType,
        async (route, contentType) => {
          const response = await send(route.method, route.path(), {
            auth: route.auth(),
            body: route.example,
            headers: { "content-type": contentType },
          });
          await rows.after(response.status);
          await expectWellFormed(response);
          expect(response.status).toBe(415);
        },
      ),
      { numRuns },
    );
  });

  test("P2, R3, C2, C3: a path id that is not a canonical positive integer is 400 or 404, never 2xx", async () => {
    const routes = everyRoute.filter(([, path]) => path("x") !== path("y"));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        badIdSegment,
        async ([method, path, auth], id) => {
          const body =
            method === "PATCH" ? '{"status":"paid"}' : method === "PUT" ? '{"qty":1}' : undefined;
          const response = await send(method, path(id), { auth: auth(), body });
          await rows.after(response.status);
          await expectWellFormed(response);
          expect(response.status).toBeGreaterThanOrEqual(400);
        },
      ),
      { numRuns },
    );
  });

  test("P1, R3: page, per_page and category garbage in the query is 400, or ignored when unknown", async () => {
    const param = fc.oneof(
      fc.tuple(fc.constantFrom("page", "per_page"), badIdSegment),
      fc.tuple(fc.constantFrom("page", "per_page"), fc.constantFrom("0", "101", "1000001", "")),
      fc.tuple(
        fc.constantFrom("category", "__proto__", "constructor", "page[]", "x"),
        badIdSegment,
      ),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("/api/products", "/api/orders"),
        param,
        async (path, [name, value]) => {
          const response = await send("GET", `${path}?${name}=${value}`, { auth: customer });
          await rows.after(response.status);
          await expectWellFormed(response);
          if (name === "page" || name === "per_page") {
            const n = decodeURIComponentOrNull(value);
            const valid =
              n !== null &&
              /^[1-9][0-9]*$/.test(n) &&
              Number(n) <= (name === "page" ? 1_000_000 : 100);
            if (!valid) expect(response.status).toBe(400);
          }
        },
      ),
      { numRuns },
    );
  });

  test("A1, E1, O5: header garbage (Authorization, X-Request-Id, Idempotency-Key, anything) is never a 5xx and changes no row unless the request is valid", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...everyRoute),
        fc.constantFrom(
          "authorization",
          "x-request-id",
          "idempotency-key",
          "accept",
          "x-forwarded-for",
          "content-length",
          "x-anything",
        ),
        headerValue,
        fc.boolean(),
        async ([method, path, auth], name, value, withToken) => {
          const body =
            method === "GET" || method === "DELETE" ? undefined : bodyFor(method, path("1"));
          const headers: Record<string, string> = { [name]: value };
          const response = await send(method, path(String(productId)), {
            auth: withToken && name !== "authorization" ? auth() : undefined,
            body,
            headers,
          });
          await rows.after(response.status);
          await expectWellFormed(response);
          if (name === "authorization" && path("1").startsWith("/api/"))
            expect(response.status).toBe(401);
        },
      ),
      { numRuns },
    );
  });

  test("E1, E3: unknown routes and methods are 4xx problem+json", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          "GET",
          "POST",
          "PUT",
          "PATCH",
          "DELETE",
          "OPTIONS",
          "TRACE",
          "PURGE",
          "M-SEARCH",
        ),
        fc.oneof(
          fc.constantFrom(
            "/",
            "/api",
            "/api/",
            "/api/products/1/x",
            "/api/cart/items",
            "/api/orders/1/pay",
            "/swagger/x",
          ),
          fc.string({ unit: "binary", maxLength: 20 }).map((s) => `/api/${encodeURIComponent(s)}`),
        ),
        async (method, path) => {
          const response = await send(method, path, { auth: admin });
          await rows.after(response.status);
          await expectWellFormed(response);
        },
      ),
      { numRuns },
    );
  });

  test("C3: a DELETE with Content-Type: application/json and no body is not a bad request", async () => {
    const { id } = await api.product();
    const headers = { "content-type": "application/json" };
    await send("PUT", `/api/cart/items/${id}`, { auth: customer, body: '{"qty":1}' });
    const removed = await send("DELETE", `/api/cart/items/${id}`, { auth: customer, headers });
    expect(removed.status).toBe(204);
    const again = await send("DELETE", `/api/cart/items/${id}`, { auth: customer, headers });
    expect(again.status).toBe(404);
    await rows.start();
  });

  test("E2: no request pollutes Object.prototype", () => {
    expect(Object.keys(Object.prototype)).toEqual([]);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });
});

const bodyFor = (method: string, path: string) =>
  bodyRoutes.find((r) => r.method === method && r.path().replace(/\d+$/, "1") === path)?.example ??
  "{}";

function decodeURIComponentOrNull(value: string): string | null {
  try {
    return decodeURIComponent(value);
  } catch {
    return null;
  }
}

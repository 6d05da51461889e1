import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connectDatabase } from "@commerce/shared/platform/database";
import { RateLimiter } from "@commerce/shared/platform/rate-limit";
import { eventually, testDatabaseUrl, unique } from "@commerce/testing/basics";
import { type ApiHarness, problemType, startApi } from "@commerce/testing/in-process";
import { hangUpMidBody } from "@commerce/testing/raw-http";
import postgres from "postgres";
import { createApp } from "./app";
import { createDatabase } from "./db";

let api: ApiHarness;
let customer: string;
beforeAll(async () => {
  api = await startApi();
  customer = (await api.customer()).token;
});
afterAll(() => api.close());

describe("operations and errors", () => {
  test("O1: /health is 200 ok without auth", async () => {
    const res = await api.call("GET", "/health");
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ status: "ok" });
  });

  test("O2: /ready is 200 when the database and NATS are up, 503 problem when either is down", async () => {
    expect((await api.call("GET", "/ready")).json).toEqual({ status: "ready" });
    const natsDown = await startApi({
      replace: { readiness: [{ name: "nats", check: () => false }] },
    });
    const down = await natsDown.call("GET", "/ready");
    expect(down.status).toBe(503);
    expect(down.headers.get("content-type")).toBe(problemType);
    expect(down.json.detail).toContain("nats");
    await natsDown.close();

    const deadSql = connectDatabase("postgres://root@127.0.0.1:1/test", { max: 1 });
    const dbDown = await startApi({ replace: { sql: deadSql } });
    const res = await dbDown.call("GET", "/ready");
    expect(res.status).toBe(503);
    expect(res.json.detail).toContain("database");
    await dbDown.close();
  });

  test("X2, E6: until the migrations are applied every route but the operational ones is the pipeline's 503", async () => {
    const starting = createApp({ ...api.deps, migrated: () => false });
    const ask = (path: string) =>
      starting.handle(
        new Request(`http://localhost${path}`, {
          headers: { authorization: `Bearer ${customer}`, "x-request-id": "starting-1" },
        }),
      );
    const read = await ask("/api/products/1");
    expect(read.status).toBe(503);
    expect(read.headers.get("content-type")).toBe(problemType);
    expect(read.headers.get("retry-after")).toBe("1");
    expect(read.headers.get("x-request-id")).toBe("starting-1");
    expect((await ask("/health")).status).toBe(200);
    expect((await ask("/metrics")).status).toBe(200);
  });

  test("O3: /metrics counts requests by route and status in Prometheus text", async () => {
    await api.call("GET", "/api/products?per_page=1", { token: customer });
    // The sample is taken after the response is sent.
    const res = await eventually(async () => {
      const scrape = await api.call("GET", "/metrics");
      return scrape.text.includes('route="/api/products"') ? scrape : undefined;
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/plain");
    expect(res.text).toMatch(
      /http_requests_total\{method="GET",route="\/api\/products",status="200"\} \d+/,
    );
    expect(res.text).toContain("# TYPE http_request_duration_seconds histogram");
    // Log lines a stalled stdout reader missed (shared/src/platform/log-output.ts), counted from start.
    expect(res.text).toContain("# TYPE log_lines_dropped_total counter");
  });

  test("O4: /swagger serves the UI and /swagger/json documents routes, bearer scheme and errors", async () => {
    for (const page of ["/swagger", "/swagger/"]) {
      const ui = await api.call("GET", page);
      expect(ui.status).toBe(200);
      expect(ui.headers.get("content-type")).toContain("text/html");
    }
    const doc = (await api.call("GET", "/swagger/json")).json;
    expect(doc.openapi).toStartWith("3.1.");
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({
      type: "http",
      scheme: "bearer",
    });
    for (const path of [
      "/api/products",
      "/api/products/{id}",
      "/api/orders",
      "/api/orders/{order_id}",
      "/api/cart",
    ])
      expect(Object.keys(doc.paths)).toContain(path);
    const create = doc.paths["/api/orders"].post;
    expect(create.security).toEqual([{ bearerAuth: [] }]);
    expect(create.requestBody.content["application/json"].schema.oneOf).toHaveLength(2);
    expect(doc.components.schemas.OneLineOrder.properties.qty).toMatchObject({
      type: "integer",
    });
    expect(create.responses["201"]).toBeDefined();
    expect(create.responses["400"].content).toEqual({
      "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } },
    });
    expect(doc.components.schemas.Problem.properties.detail).toBeDefined();
  });

  test("D1: collection routes answer without a trailing slash, and still with one", async () => {
    for (const path of [
      "/api/products",
      "/api/products/",
      "/api/orders",
      "/api/cart",
      "/api/cart/",
    ])
      expect((await api.call("GET", path, { token: customer })).status).toBe(200);
  });

  test("O5: every response carries X-Request-Id: the client's sane one, else a new one", async () => {
    const echoed = await api.call("GET", "/health", { headers: { "x-request-id": "abc-123" } });
    expect(echoed.headers.get("x-request-id")).toBe("abc-123");
    const replaced = await api.call("GET", "/health", {
      headers: { "x-request-id": "bad id\twith spaces" },
    });
    expect(replaced.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const error = await api.call("GET", "/api/products/0", {
      token: customer,
      headers: { "x-request-id": "err-1" },
    });
    expect(error.headers.get("x-request-id")).toBe("err-1");
    const unauthorized = await api.call("GET", "/api/cart", {
      headers: { "x-request-id": "err-2" },
    });
    expect(unauthorized.headers.get("x-request-id")).toBe("err-2");
  });

  test("O6: one JSON log line per request with time, level, request_id, method, route, status, duration_ms", async () => {
    await api.call("GET", "/api/products/0", {
      token: customer,
      headers: { "x-request-id": "log-check-1" },
    });
    const line = await eventually(async () =>
      api.logLines.map((l) => JSON.parse(l)).find((l) => l.request_id === "log-check-1"),
    );
    expect(line).toMatchObject({
      level: "info",
      method: "GET",
      route: "/api/products/:id",
      status: 400,
      duration_ms: expect.any(Number),
    });
    expect(Date.parse(line.time)).not.toBeNaN();
  });

  test("E3: past a customer's request budget the api answers 429 with Retry-After", async () => {
    const limited = await startApi({
      replace: { rateLimiter: new RateLimiter({ ratePerSecond: 1, burst: 2 }) },
    });
    const alice = await limited.customer();
    const bob = await limited.customer();
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await limited.call("GET", "/api/cart", { token: alice.token })).status);
    expect(statuses).toEqual([200, 200, 429]);
    const refused = await limited.call("GET", "/api/cart", { token: alice.token });
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.json).toMatchObject({ status: 429, title: "Too Many Requests" });
    expect(refused.headers.get("ratelimit-policy")).toBe('"default";q=2;w=2');
    expect(refused.headers.get("ratelimit")).toMatch(/^"default";r=0;t=[12]$/);
    expect((await limited.call("GET", "/api/cart", { token: bob.token })).status).toBe(200);
    await limited.close();
  });

  test("D4: every /api response carries RateLimit-Policy, and RateLimit once the caller is known", async () => {
    const limited = await startApi({
      // A token back every 200 ms: the test's few requests never see one refilled.
      replace: { rateLimiter: new RateLimiter({ ratePerSecond: 5, burst: 100 }) },
    });
    const alice = await limited.customer();
    const first = await limited.call("GET", "/api/cart", { token: alice.token });
    expect(first.headers.get("ratelimit-policy")).toBe('"default";q=100;w=20');
    expect(first.headers.get("ratelimit")).toMatch(/^"default";r=99;t=[01]$/);
    const missing = await limited.call("GET", "/api/products/0", { token: alice.token });
    expect(missing.status).toBe(400);
    expect(missing.headers.get("ratelimit")).toMatch(/^"default";r=98;/);
    const anonymous = await limited.call("GET", "/api/cart");
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("ratelimit-policy")).toBe('"default";q=100;w=20');
    expect(anonymous.headers.get("ratelimit")).toBeNull();
    expect((await limited.call("GET", "/health")).headers.get("ratelimit-policy")).toBeNull();
    await limited.close();
  });

  test("E1, E3: an unknown route is 404 problem+json", async () => {
    const res = await api.call("GET", "/nowhere");
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe(problemType);
    expect(res.json).toEqual({
      type: "about:blank",
      title: "Not Found",
      status: 404,
      detail: "No such route",
    });
  });

  test("E3: a body over 16 KiB is 413, a non-JSON content type 415, malformed JSON 400", async () => {
    const product = await api.product();
    const { sub, token } = await api.customer();
    const big = JSON.stringify({ product_id: product.id, qty: 1, pad: "x".repeat(17 * 1024) });
    const tooBig = await api.call("POST", "/api/orders", { token, body: big });
    expect(tooBig.status).toBe(413);
    expect(tooBig.json).toMatchObject({ status: 413, title: "Payload Too Large" });
    const text = await api.call("POST", "/api/orders", {
      token,
      body: JSON.stringify({ product_id: product.id, qty: 1 }),
      headers: { "content-type": "text/plain" },
    });
    expect(text.status).toBe(415);
    expect(text.headers.get("content-type")).toBe(problemType);
    const form = await api.call("PUT", `/api/cart/items/${product.id}`, {
      token,
      body: "qty=1",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(form.status).toBe(415);
    const broken = await api.call("POST", "/api/orders", { token, body: "{" });
    expect(broken.status).toBe(400);
    expect(broken.json.detail).toBe("The request body is not valid JSON");
    const [{ n }] =
      await api.sql`select count(*)::int as n from api.orders where customer_id = ${sub}`;
    expect(n).toBe(0);
  });

  test("E2, E3: the database down is 503 problem+json without SQL or stack", async () => {
    const deadSql = connectDatabase("postgres://root@127.0.0.1:1/test", { max: 1 });
    const dbDown = await startApi({
      replace: { sql: deadSql, db: (await import("./db")).createDatabase(deadSql) },
    });
    const res = await dbDown.call("GET", "/api/products", { token: customer });
    expect(res.status).toBe(503);
    expect(res.headers.get("content-type")).toBe(problemType);
    expect(res.text).not.toMatch(/select|at .*\.ts|ECONNREFUSED/i);
    await dbDown.close();
  });

  test("N3: a client that hangs up mid-body is logged at info as client_closed, never as a 5xx", async () => {
    const listening = await startApi({ env: { PORT: "0" } });
    listening.service.start();
    try {
      const port = listening.service.app.server?.port as number;
      const body = JSON.stringify({ name: "x".repeat(4000), price: 1, category: unique("cat") });
      const admin = await listening.admin();
      for (const chunked of [false, true])
        await hangUpMidBody(port, "/api/products", body, {
          headers: { authorization: `Bearer ${admin}` },
          chunked,
        });
      const logged = () => listening.logLines.map((line) => JSON.parse(line));
      await eventually(
        async () =>
          logged().filter((line) => line.msg === "client_closed").length === 2 ? true : undefined,
        3000,
        "two client_closed lines",
      );
      expect(logged().filter((line) => line.msg === "client_closed")).toEqual([
        expect.objectContaining({ level: "info", method: "POST", path: "/api/products" }),
        expect.objectContaining({ level: "info", method: "POST", path: "/api/products" }),
      ]);
      expect(logged().filter((line) => line.level === "error")).toEqual([]);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).not.toMatch(/http_requests_total\{[^}]*status="5\d\d"/);
      expect(metrics).toMatch(/http_requests_total\{[^}]*status="499"\} 2/);
    } finally {
      await listening.close();
    }
  });

  test("N3: a database error is logged by its SQLSTATE, never with the SQL text or parameters", async () => {
    // A real database that refuses every write: the insert fails inside PostgreSQL.
    const readOnly = postgres(testDatabaseUrl, {
      max: 1,
      onnotice: () => {},
      connection: { default_transaction_read_only: true },
    });
    const refusing = await startApi({ replace: { db: createDatabase(readOnly) } });
    try {
      const name = unique("secret-product-name");
      const res = await refusing.call("POST", "/api/products", {
        token: await refusing.admin(),
        body: { name, price: 87_654_321, category: unique("cat") },
      });
      // X2: a write refused as read-only (a standby) is the database's state, not a bug: 503.
      expect(res.status).toBe(503);
      const lines = refusing.logLines.join("");
      expect(lines).not.toContain(name);
      expect(lines).not.toContain(String(87_654_321));
      expect(lines).not.toMatch(/insert into|"api"\."products"|params:/i);
      const logged = refusing.logLines.map((line) => JSON.parse(line));
      expect(logged).toContainEqual(
        expect.objectContaining({
          level: "error",
          msg: "dependency unavailable",
          error: "database error",
          error_code: "25006",
        }),
      );
    } finally {
      await refusing.close();
      await readOnly.end();
    }
  });
});

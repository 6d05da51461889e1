import { describe, expect, test } from "bun:test";
import { connectDatabase } from "@commerce/shared/platform/database";
import { parseTraceparent } from "@commerce/shared/platform/tracing";
import { eventually } from "@commerce/testing/basics";
import { type PaymentsHarness, paymentsForFile } from "@commerce/testing/in-process";
import {
  collectingLogger,
  jsonOf,
  notificationRequest,
  paymentSucceeded,
  uniqueOrderId,
} from "@commerce/testing/payments-requests";

const payments = await paymentsForFile();

const get = (
  app: ReturnType<PaymentsHarness["app"]>,
  path: string,
  headers: Record<string, string> = {},
) => app.handle(new Request(`http://localhost${path}`, { headers }));

describe("operations", () => {
  test("O1: /health is 200 ok", async () => {
    const response = await get(payments.app(), "/health");
    expect(response.status).toBe(200);
    expect(await jsonOf(response)).toEqual({ status: "ok" });
  });

  test("X2, E6: until the migrations are applied every route but the operational ones is the pipeline's 503", async () => {
    const starting = payments.app({ migrated: () => false });
    // The webhook: no token to check first, so the gate is what answers.
    const refused = await get(starting, "/api/webhooks/payment", { "x-request-id": "starting-2" });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.headers.get("x-request-id")).toBe("starting-2");
    expect((await get(starting, "/health")).status).toBe(200);
  });

  test("O2: /ready is 200 when the database and NATS are up", async () => {
    const app = payments.app({ readiness: [{ name: "nats", check: () => true }] });
    const response = await get(app, "/ready");
    expect(response.status).toBe(200);
    expect(await jsonOf(response)).toEqual({ status: "ready" });
  });

  test("O2: /ready is 503 problem when NATS is down", async () => {
    const app = payments.app({ readiness: [{ name: "nats", check: () => false }] });
    const response = await get(app, "/ready");
    expect(response.status).toBe(503);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect((await jsonOf(response)).detail).toBe("Not ready: nats unavailable");
  });

  test("O2: /ready is 503 problem when the database is down", async () => {
    const deadSql = connectDatabase("postgres://root@127.0.0.1:1/test", { max: 1 });
    const app = payments.app({ sql: deadSql });
    const response = await get(app, "/ready");
    expect(response.status).toBe(503);
    expect((await jsonOf(response)).detail).toContain("database");
    await deadSql.end();
  });

  test("O4: /swagger/json documents the webhook: X-Signature, body schema and every answer", async () => {
    const app = payments.app();
    expect((await get(app, "/swagger")).headers.get("content-type")).toContain("text/html");
    const doc = await jsonOf(await get(app, "/swagger/json"));
    expect(doc.openapi).toStartWith("3.1.");
    const route = doc.paths["/api/webhooks/payment"].post;
    expect(route.security).toEqual([{ paymentSignature: [] }]);
    expect(doc.components.securitySchemes.paymentSignature).toMatchObject({
      type: "apiKey",
      in: "header",
      name: "x-signature",
    });
    expect(route.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/PaymentNotification",
    });
    const schema = doc.components.schemas.PaymentNotification;
    expect(schema.required).toEqual(["event", "order_id", "amount", "currency"]);
    expect(schema.properties.order_id).toMatchObject({ type: "integer", minimum: 1 });
    expect(schema.properties.currency).toMatchObject({ pattern: "^[A-Z]{3}$" });
    expect(Object.keys(route.responses).sort()).toEqual(
      ["200", "400", "401", "413", "415", "429", "503"].sort(),
    );
    expect(route.responses["401"].content).toEqual({
      "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } },
    });
  });

  test("O4, V3: /swagger/json documents the operator routes: admin bearer token, who may call, every answer", async () => {
    const doc = await jsonOf(await get(payments.app(), "/swagger/json"));
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ scheme: "bearer" });
    const operations = [
      doc.paths["/api/notifications"].get,
      doc.paths["/api/notifications/{id}"].get,
      doc.paths["/api/notifications/{id}/replay"].post,
    ];
    for (const operation of operations) {
      expect(operation.security).toEqual([{ bearerAuth: ["admin"] }]);
      expect(operation.summary).toBeTruthy();
      expect(operation.description).toContain("Admin only");
      expect(Object.keys(operation.responses)).toEqual(
        expect.arrayContaining(["400", "401", "403", "503"]),
      );
    }
    expect(Object.keys(operations[2].responses)).toEqual(
      expect.arrayContaining(["202", "404", "409"]),
    );
    expect(
      doc.paths["/api/notifications"].get.responses["200"].content["application/json"].schema,
    ).toEqual({ $ref: "#/components/schemas/NotificationPage" });
    expect(doc.components.schemas.NotificationPage.properties.items.items).toEqual({
      $ref: "#/components/schemas/Notification",
    });
    const item = doc.components.schemas.Notification;
    expect(Object.keys(item.properties).sort()).toEqual(
      [
        "amount",
        "currency",
        "event",
        "id",
        "ignored",
        "key",
        "order_id",
        "payment_ref",
        "provider",
        "published_at",
        "received_at",
        "source",
        "source_ip",
        "trace_id",
      ].sort(),
    );
  });

  test("O5: every response carries X-Request-Id, the client's when it is sane", async () => {
    const app = payments.app();
    const echoed = await get(app, "/health", { "x-request-id": "provider-req-42" });
    expect(echoed.headers.get("x-request-id")).toBe("provider-req-42");
    const replaced = await get(app, "/health", { "x-request-id": "not sane\u0001" });
    expect(replaced.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const accepted = await app.handle(notificationRequest(paymentSucceeded(uniqueOrderId())));
    expect(accepted.headers.get("x-request-id")).toBeTruthy();
    const rejected = await app.handle(
      notificationRequest(paymentSucceeded(uniqueOrderId()), { signature: null }),
    );
    expect(rejected.headers.get("x-request-id")).toBeTruthy();
  });
});

describe("trace context", () => {
  const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
  const callerSpan = "00f067aa0ba902b7";

  test("O8: a request continues the caller's traceparent: same trace id, a span id of its own, in the response and the request log line", async () => {
    const { logger, lines } = collectingLogger();
    const app = payments.app({ logger });
    const response = await get(app, "/health", { traceparent: `00-${traceId}-${callerSpan}-01` });
    const sent = parseTraceparent(response.headers.get("traceparent"));
    expect(sent).toMatchObject({ traceId, sampled: true });
    expect(sent?.spanId).not.toBe(callerSpan);
    // The request line is written after the response is sent.
    const line = await eventually(async () => lines.find((l) => l.msg === "request"));
    expect(line).toMatchObject({
      trace_id: traceId,
      span_id: sent?.spanId,
      request_id: response.headers.get("x-request-id"),
    });
  });

  test("O8: without a valid traceparent a request starts a new trace, and is never refused for it", async () => {
    const { logger, lines } = collectingLogger();
    const app = payments.app({ logger });
    const fresh = await get(app, "/health");
    const invalid = await app.handle(
      notificationRequest(paymentSucceeded(uniqueOrderId()), {
        headers: { traceparent: `00-${traceId}-${"0".repeat(16)}-01` },
      }),
    );
    expect(invalid.status).toBe(200);
    const traces = [fresh, invalid].map((r) => parseTraceparent(r.headers.get("traceparent")));
    for (const trace of traces) {
      expect(trace?.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(trace?.traceId).not.toBe(traceId);
    }
    expect(traces[0]?.traceId).not.toBe(traces[1]?.traceId);
    const logged = await eventually(async () => {
      const found = lines.filter((l) => l.msg === "request").map((l) => l.trace_id);
      return found.length === 2 ? found : undefined;
    });
    expect(logged.sort()).toEqual(traces.map((t) => t?.traceId).sort());
  });

  test("O8: an error response and its log line carry the request's trace", async () => {
    const { logger, lines } = collectingLogger();
    const deadDatabase = connectDatabase("postgres://nobody@127.0.0.1:1/none", { max: 1 });
    const app = payments.app({ logger, sql: deadDatabase });
    const response = await app.handle(
      notificationRequest(paymentSucceeded(uniqueOrderId()), {
        headers: { traceparent: `00-${traceId}-${callerSpan}-01` },
      }),
    );
    await deadDatabase.end();
    expect(response.status).toBe(503);
    expect(parseTraceparent(response.headers.get("traceparent"))?.traceId).toBe(traceId);
    const errors = lines.filter((l) => l.level === "error");
    expect(errors.length).toBeGreaterThan(0);
    for (const line of errors) expect(line.trace_id).toBe(traceId);
  });
});

describe("errors", () => {
  test("E1: errors are problem+json with type, title, status and detail; status equals the HTTP status", async () => {
    const app = payments.app();
    const answers = [
      await get(app, "/no/such/route"),
      await app.handle(notificationRequest(paymentSucceeded(uniqueOrderId()), { signature: null })),
      await app.handle(
        notificationRequest(paymentSucceeded(uniqueOrderId()), { contentType: "text/plain" }),
      ),
      await app.handle(notificationRequest(paymentSucceeded(0))),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([404, 401, 415, 400]);
    for (const answer of answers) {
      expect(answer.headers.get("content-type")).toBe("application/problem+json");
      const problem = await jsonOf(answer);
      expect(Object.keys(problem)).toEqual(
        expect.arrayContaining(["type", "title", "status", "detail"]),
      );
      expect(problem.status).toBe(answer.status);
    }
  });

  test("E1: validation failures list errors as path and message", async () => {
    const answer = await payments
      .app()
      .handle(notificationRequest(paymentSucceeded(uniqueOrderId(), { amount: "10" })));
    expect(answer.status).toBe(400);
    expect((await jsonOf(answer)).errors).toEqual([
      { path: "/amount", message: "amount must be an integer of at least 0" },
    ]);
  });

  test("E2, E4: the webhook answers no other method with a 2xx: 405 with Allow: POST", async () => {
    const app = payments.app();
    for (const method of ["GET", "PUT", "DELETE"]) {
      const answer = await app.handle(
        new Request("http://localhost/api/webhooks/payment", { method }),
      );
      expect({ method, status: answer.status }).toEqual({ method, status: 405 });
      expect(answer.headers.get("allow")).toBe("POST");
    }
  });
});

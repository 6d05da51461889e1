import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { signPayload } from "@commerce/shared/contract/signature";
import { Metrics } from "@commerce/shared/platform/metrics";
import { eventually, webhookSecret as secret } from "@commerce/testing/basics";
import { paymentsForFile, startPayments } from "@commerce/testing/in-process";
import {
  collectingLogger,
  frozenLimiter,
  notificationRequest,
  nowSeconds,
  paymentSucceeded,
  rowsFor,
  uniqueOrderId,
} from "@commerce/testing/payments-requests";
import { hangUpMidBody } from "@commerce/testing/raw-http";

const payments = await paymentsForFile();

const notificationRow = async (id: string) => {
  const [row] = await payments.sql`select * from payments.notifications where id = ${id}`;
  return row;
};
const outboxRows = (orderId: number) =>
  payments.sql`select * from payments.outbox where payload->>'order_id' = ${String(orderId)}`;

describe("notification id", () => {
  test("W4: the provider's id is the notification id when present", async () => {
    const orderId = uniqueOrderId();
    const id = `evt_${crypto.randomUUID()}`;
    const response = await payments
      .app()
      .handle(notificationRequest(paymentSucceeded(orderId, { id })));
    expect(response.status).toBe(200);
    expect((await notificationRow(id)).order_id).toBe(String(orderId));
  });

  test("W4: without an id, it is the hex SHA-256 of event|order_id|amount|currency", async () => {
    const orderId = uniqueOrderId();
    const expected = createHash("sha256")
      .update(`payment.succeeded|${orderId}|1999|USD`)
      .digest("hex");
    const response = await payments.app().handle(notificationRequest(paymentSucceeded(orderId)));
    expect(response.status).toBe(200);
    const [row] =
      await payments.sql`select id from payments.notifications where order_id = ${orderId}`;
    expect(row.id).toBe(expected);
  });

  test("W4: without an id, the same four fields are the same notification whatever else differs", async () => {
    const app = payments.app();
    const orderId = uniqueOrderId();
    const first = await app.handle(notificationRequest(paymentSucceeded(orderId, { note: "a" })));
    const again = await app.handle(
      notificationRequest(`{"currency":"USD","amount":1999,"order_id":${orderId},
        "event":"payment.succeeded","note":"b"}`),
    );
    expect(await first.json()).toEqual({ received: true });
    expect(await again.json()).toEqual({ received: true, duplicate: true });
    expect(await rowsFor(payments.sql, orderId)).toEqual({ notifications: 1, outbox: 1 });
  });

  test("W4: different provider ids for the same payment are different notifications", async () => {
    const app = payments.app();
    const orderId = uniqueOrderId();
    for (const id of ["evt_a", "evt_b"].map((name) => `${name}_${orderId}`))
      expect(
        await (await app.handle(notificationRequest(paymentSucceeded(orderId, { id })))).json(),
      ).toEqual({ received: true });
    expect(await rowsFor(payments.sql, orderId)).toEqual({ notifications: 2, outbox: 2 });
  });
});

describe("accepting", () => {
  test("W5, O8: an accepted payment.succeeded stores the notification with its trace context and its order-paid message", async () => {
    let kicks = 0;
    const app = payments.app({ trustProxy: 1, outboxWritten: () => kicks++ });
    const orderId = uniqueOrderId();
    const id = `evt_${crypto.randomUUID()}`;
    const raw = JSON.stringify(paymentSucceeded(orderId, { id, amount: 2598, currency: "EUR" }));
    const traceId = crypto.randomUUID().replaceAll("-", "");
    const response = await app.handle(
      notificationRequest(raw, {
        headers: {
          "x-forwarded-for": "203.0.113.9",
          traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
        },
      }),
    );
    expect(response.status).toBe(200);
    const traceparent = response.headers.get("traceparent");
    expect(traceparent).toStartWith(`00-${traceId}-`);
    expect(await response.json()).toEqual({ received: true });

    const row = await notificationRow(id);
    expect(row).toMatchObject({
      id,
      event: "payment.succeeded",
      order_id: String(orderId),
      amount: "2598",
      currency: "EUR",
      raw_body: raw,
      source_ip: "203.0.113.9",
      traceparent,
    });
    const receivedAt = new Date(row.received_at);
    expect(Math.abs(receivedAt.getTime() - Date.now())).toBeLessThan(60_000);

    const outbox = await outboxRows(orderId);
    expect(outbox).toHaveLength(1);
    expect(outbox[0]).toMatchObject({
      subject: payments.topology.payments.orderPaid,
      message_id: id,
      published_at: null,
      headers: { traceparent },
    });
    expect(outbox[0].payload).toEqual({
      notification_id: id,
      order_id: orderId,
      amount: 2598,
      currency: "EUR",
      received_at: receivedAt.toISOString(),
      // M1: for the seed's format the notification is the payment.
      provider: "generic",
      payment_ref: id,
    });
    expect(kicks).toBe(1);
  });

  test("W5, M1: payment.refunded and payment.failed make their own messages; other events are only stored", async () => {
    let kicks = 0;
    const app = payments.app({ outboxWritten: () => kicks++ });
    const orderId = uniqueOrderId();
    for (const event of ["payment.failed", "payment.refunded", "charge.dispute.created"]) {
      const response = await app.handle(notificationRequest(paymentSucceeded(orderId, { event })));
      expect(await response.json()).toEqual({ received: true });
    }
    expect(await rowsFor(payments.sql, orderId)).toEqual({ notifications: 3, outbox: 2 });
    const subjects = await payments.sql<{ subject: string }[]>`
      select subject from payments.outbox where payload->>'order_id' = ${String(orderId)}
      order by subject`;
    expect(subjects.map((row) => row.subject)).toEqual([
      payments.topology.payments.orderFailed,
      payments.topology.payments.orderRefunded,
    ]);
    expect(kicks).toBe(2);
  });

  test("W5: a repeated notification id answers duplicate and stores and publishes nothing new", async () => {
    let kicks = 0;
    const app = payments.app({ outboxWritten: () => kicks++ });
    const orderId = uniqueOrderId();
    const id = `evt_${crypto.randomUUID()}`;
    const first = await app.handle(notificationRequest(paymentSucceeded(orderId, { id })));
    expect(await first.json()).toEqual({ received: true });
    const stored = await notificationRow(id);

    const again = await app.handle(notificationRequest(paymentSucceeded(orderId, { id })));
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ received: true, duplicate: true });
    // The same id with a different body is still the first notification, unchanged.
    const changed = await app.handle(
      notificationRequest(paymentSucceeded(orderId, { id, amount: 1 })),
    );
    expect(await changed.json()).toEqual({ received: true, duplicate: true });

    expect(await notificationRow(id)).toEqual(stored);
    expect(await rowsFor(payments.sql, orderId)).toEqual({ notifications: 1, outbox: 1 });
    expect(kicks).toBe(1);
  });
});

describe("concurrent duplicates", () => {
  test("W8: 50 concurrent duplicates give one stored notification and one outbox row", async () => {
    let kicks = 0;
    const app = payments.app({ outboxWritten: () => kicks++ });
    const orderId = uniqueOrderId();
    const raw = JSON.stringify(paymentSucceeded(orderId, { id: `evt_${orderId}` }));
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => app.handle(notificationRequest(raw))),
    );
    const bodies = (await Promise.all(responses.map((response) => response.json()))) as {
      received: boolean;
      duplicate?: boolean;
    }[];
    expect(responses.map((response) => response.status)).toEqual(Array(50).fill(200));
    expect(bodies.filter((body) => !body.duplicate)).toEqual([{ received: true }]);
    expect(bodies.filter((body) => body.duplicate)).toHaveLength(49);
    expect(await rowsFor(payments.sql, orderId)).toEqual({ notifications: 1, outbox: 1 });
    expect(kicks).toBe(1);
  });

  test("W8: 50 concurrent duplicates without a provider id also give one row each", async () => {
    const app = payments.app();
    const orderId = uniqueOrderId();
    const raw = JSON.stringify(paymentSucceeded(orderId));
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => app.handle(notificationRequest(raw))),
    );
    expect(responses.every((response) => response.status === 200)).toBe(true);
    expect(await rowsFor(payments.sql, orderId)).toEqual({ notifications: 1, outbox: 1 });
  });
});

describe("logging and metrics", () => {
  const notificationLines = (lines: Record<string, unknown>[]) =>
    lines.filter((line) => line.msg === "notification");

  test("W9, O8: accepted, duplicate and rejected notifications are each logged once with their fields and trace_id", async () => {
    const { logger, lines } = collectingLogger();
    const app = payments.app({ logger });
    const orderId = uniqueOrderId();
    const id = `evt_${crypto.randomUUID()}`;
    const accepted = await app.handle(notificationRequest(paymentSucceeded(orderId, { id })));
    await app.handle(notificationRequest(paymentSucceeded(orderId, { id })));
    await app.handle(notificationRequest(paymentSucceeded(orderId), { signWith: "whsec_forged" }));
    await app.handle(notificationRequest(paymentSucceeded(orderId, { amount: -1 })));

    const logged = notificationLines(lines);
    expect(logged).toHaveLength(4);
    expect(logged[0]).toMatchObject({
      level: "info",
      service: "payments",
      outcome: "accepted",
      notification_id: id,
      event: "payment.succeeded",
      order_id: orderId,
      source_ip: "unknown",
      request_id: accepted.headers.get("x-request-id"),
      trace_id: accepted.headers.get("traceparent")?.split("-")[1],
    });
    for (const line of logged) expect(line.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(logged[0]).not.toHaveProperty("reason");
    expect(logged[1]).toMatchObject({
      outcome: "duplicate",
      notification_id: id,
      order_id: orderId,
    });
    // Nothing of an unauthenticated body is logged.
    expect(logged[2]).toMatchObject({
      level: "warn",
      outcome: "rejected",
      reason: "signature_mismatch",
    });
    expect(logged[2]).not.toHaveProperty("order_id");
    expect(logged[2]).not.toHaveProperty("notification_id");
    expect(logged[3]).toMatchObject({
      outcome: "rejected",
      reason: "invalid_schema",
      event: "payment.succeeded",
      order_id: orderId,
    });
  });

  test("W9: each rejection reason is logged", async () => {
    const { logger, lines } = collectingLogger();
    // Eight refusals spend a budget of eight (413 and 415 too, N21); the ninth request is 429.
    const app = payments.app({ logger, rateLimiter: frozenLimiter(8) });
    const orderId = uniqueOrderId();
    const body = paymentSucceeded(orderId);
    await app.handle(notificationRequest(JSON.stringify(body).padEnd(70_000)));
    await app.handle(notificationRequest(body, { contentType: "text/plain" }));
    await app.handle(notificationRequest(body, { signature: null }));
    await app.handle(notificationRequest(body, { signature: "t=1" }));
    await app.handle(notificationRequest(body, { timestamp: 1_000_000_000 }));
    await app.handle(notificationRequest(body, { timestamp: 9_000_000_000 }));
    await app.handle(notificationRequest("{"));
    await app.handle(notificationRequest(body, { signWith: "whsec_forged" }));
    await app.handle(notificationRequest(body));
    expect(notificationLines(lines).map((line) => line.reason)).toEqual([
      "too_large",
      "unsupported_media_type",
      "signature_missing",
      "signature_malformed",
      "signature_stale",
      "signature_future",
      "invalid_json",
      "signature_mismatch",
      "rate_limited",
    ]);
  });

  test("W9: the signature, the secret and the body never appear in the log", async () => {
    const { logger, lines } = collectingLogger();
    const app = payments.app({ logger });
    const orderId = uniqueOrderId();
    const requests = [
      notificationRequest(paymentSucceeded(orderId, { card_holder: "secret-holder-name" })),
      notificationRequest(paymentSucceeded(orderId, { card_holder: "secret-holder-name" })),
      notificationRequest(paymentSucceeded(orderId, { card_holder: "secret-holder-name" }), {
        signWith: "whsec_forged",
      }),
      notificationRequest(
        paymentSucceeded(orderId, { currency: "bad", card_holder: "secret-holder-name" }),
      ),
    ];
    const signatures = requests.map((request) => request.headers.get("x-signature") as string);
    for (const request of requests) await app.handle(request);
    const text = lines.map((line) => JSON.stringify(line)).join("\n");
    expect(notificationLines(lines)).toHaveLength(4);
    expect(text).not.toContain(secret);
    expect(text).not.toContain("whsec_");
    expect(text).not.toContain("secret-holder-name");
    for (const signature of signatures) {
      expect(text).not.toContain(signature);
      expect(text).not.toContain(signature.split("v1=")[1]);
    }
  });

  test("N3: a provider that hangs up mid-body is logged at info as client_closed, not counted as failed, and stores nothing", async () => {
    const listening = await startPayments({ env: { PORT: "0" } });
    listening.service.start();
    try {
      const port = listening.service.app.server?.port as number;
      const orderIds = [uniqueOrderId(), uniqueOrderId()];
      for (const [i, orderId] of orderIds.entries()) {
        const body = JSON.stringify(paymentSucceeded(orderId, { padding: "x".repeat(2000) }));
        await hangUpMidBody(port, "/api/webhooks/payment", body, {
          headers: { "x-signature": signPayload(body, secret, nowSeconds()) },
          chunked: i === 1,
        });
      }
      const logged = () => listening.logLines.map((line) => JSON.parse(line));
      await eventually(
        async () =>
          logged().filter((line) => line.msg === "client_closed").length === 2 ? true : undefined,
        3000,
        "two client_closed lines",
      );
      expect(logged().filter((line) => line.msg === "notification")).toEqual([
        expect.objectContaining({ level: "info", outcome: "client_closed" }),
        expect.objectContaining({ level: "info", outcome: "client_closed" }),
      ]);
      expect(logged().filter((line) => line.level === "error")).toEqual([]);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toContain('notifications_total{outcome="client_closed",reason="none"} 2');
      expect(metrics).not.toContain('outcome="failed"');
      expect(metrics).not.toMatch(/http_requests_total\{[^}]*status="5\d\d"/);
      for (const orderId of orderIds)
        expect(await rowsFor(listening.sql, orderId)).toEqual({ notifications: 0, outbox: 0 });
    } finally {
      await listening.close();
    }
  });

  test("O3: /metrics counts notifications by outcome and reason", async () => {
    const metrics = new Metrics();
    const app = payments.app({ metrics });
    const orderId = uniqueOrderId();
    await app.handle(notificationRequest(paymentSucceeded(orderId)));
    await app.handle(notificationRequest(paymentSucceeded(orderId)));
    await app.handle(notificationRequest(paymentSucceeded(orderId)));
    await app.handle(notificationRequest(paymentSucceeded(orderId), { signature: null }));
    const scrape = await eventually(async () => {
      const text = await (await app.handle(new Request("http://localhost/metrics"))).text();
      return text.includes('status="401"') ? text : undefined;
    });
    expect(scrape).toContain('notifications_total{outcome="accepted",reason="none"} 1');
    expect(scrape).toContain('notifications_total{outcome="duplicate",reason="none"} 2');
    expect(scrape).toContain(
      'notifications_total{outcome="rejected",reason="signature_missing"} 1',
    );
    expect(scrape).toMatch(
      /http_requests_total\{method="POST",route="\/api\/webhooks\/payment",status="401"\} 1/,
    );
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createLogger } from "@commerce/shared/platform/logger";
import { ensureStream, NatsLink } from "@commerce/shared/platform/nats";
import { OutboxRelay } from "@commerce/shared/platform/outbox/relay";
import { eventually, testNatsUrl, token, unique } from "@commerce/testing/basics";
import { type PaymentsHarness, problemType, startPayments } from "@commerce/testing/in-process";
import {
  notificationRequest,
  paymentSucceeded,
  uniqueOrderId,
} from "@commerce/testing/payments-requests";
import type { JsMsg } from "nats";

const silent = createLogger("error", {}, () => {});

let payments: PaymentsHarness;
let admin: string;
let customer: string;
beforeAll(async () => {
  payments = await startPayments();
  admin = await token({ sub: unique("op"), scope: "admin" });
  customer = await token({ sub: unique("cust") });
});
afterAll(() => payments.close());

const call = async (
  method: string,
  path: string,
  bearer?: string,
  app = payments.app(),
): Promise<{ status: number; headers: Headers; json: any }> => {
  const headers: Record<string, string> = bearer ? { authorization: `Bearer ${bearer}` } : {};
  const response = await app.handle(new Request(`http://localhost${path}`, { method, headers }));
  return { status: response.status, headers: response.headers, json: await response.json() };
};

/** Stores a notification through the webhook, as the provider sends it. */
async function notify(body: Record<string, unknown> | string) {
  const response = await payments.app().handle(notificationRequest(body as never));
  expect(response.status).toBe(200);
}

const outboxRows = (notificationId: string) =>
  payments.sql<
    { message_id: string; subject: string; payload: any; published_at: string | null }[]
  >`
    select message_id, subject, payload,
      to_char(published_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as published_at
    from payments.outbox
    where payload->>'notification_id' = ${notificationId} order by id`;

describe("operator routes: who may call", () => {
  test("V3: no token or an invalid one is 401 with a Bearer challenge; a customer token is 403", async () => {
    const id = unique("evt");
    await notify(paymentSucceeded(uniqueOrderId(), { id }));
    const forged = await token(
      { sub: "op", scope: "admin" },
      "not-the-secret-but-32-characters-long!",
    );
    for (const [method, path] of [
      ["GET", "/api/notifications"],
      ["GET", `/api/notifications/${id}`],
      ["POST", `/api/notifications/${id}/replay`],
      ["GET", "/api/nowhere"],
    ]) {
      const anonymous = await call(method, path);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get("content-type")).toBe(problemType);
      expect(anonymous.headers.get("www-authenticate")).toBe('Bearer realm="payments"');
      const invalid = await call(method, path, forged);
      expect(invalid.status).toBe(401);
      expect(invalid.headers.get("www-authenticate")).toBe(
        'Bearer realm="payments", error="invalid_token"',
      );
      if (path !== "/api/nowhere") expect((await call(method, path, customer)).status).toBe(403);
    }
    expect(await outboxRows(id)).toHaveLength(1);
  });

  test("V3: the webhook still needs no token, only its signature", async () => {
    const response = await payments
      .app()
      .handle(notificationRequest(paymentSucceeded(uniqueOrderId())));
    expect(response.status).toBe(200);
  });

  test("V3: without AUTH_JWT_SECRET or AUTH_JWKS_URL payments starts, its operator routes answer 503 and the webhook works", async () => {
    const unconfigured = await startPayments({ env: { AUTH_JWT_SECRET: "" } });
    try {
      expect(unconfigured.service.deps.verifyToken).toBeUndefined();
      expect(unconfigured.logLines.join("\n")).toContain("operator routes answer 503");
      for (const bearer of [undefined, admin]) {
        const answer = await call("GET", "/api/notifications", bearer, unconfigured.app());
        expect(answer.status).toBe(503);
        expect(answer.json.detail).toContain("AUTH_JWT_SECRET");
      }
      const webhook = await unconfigured
        .app()
        .handle(notificationRequest(paymentSucceeded(uniqueOrderId())));
      expect(webhook.status).toBe(200);
    } finally {
      await unconfigured.close();
    }
  });
});

describe("operator routes: reading", () => {
  test("V3: the list filters by order_id and event, newest first, paged as every list", async () => {
    const orderId = uniqueOrderId();
    const ids = [unique("evt"), unique("evt"), unique("evt")];
    await notify(paymentSucceeded(orderId, { id: ids[0] }));
    await notify(paymentSucceeded(orderId, { id: ids[1], event: "charge.disputed" }));
    await notify(paymentSucceeded(orderId, { id: ids[2], amount: 5 }));
    await notify(paymentSucceeded(uniqueOrderId()));

    const all = await call("GET", `/api/notifications?order_id=${orderId}`, admin);
    expect(all.status).toBe(200);
    expect(all.json).toMatchObject({ page: 1, pages: 1, per_page: 20, total: 3 });
    expect(all.json.items.map((item: any) => item.id)).toEqual([ids[2], ids[1], ids[0]]);
    expect(all.json.items[0]).toEqual({
      id: ids[2],
      key: ids[2],
      provider: "generic",
      event: "payment.succeeded",
      order_id: orderId,
      payment_ref: ids[2],
      amount: 5,
      currency: "USD",
      received_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      source_ip: expect.any(String),
      published_at: null,
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      ignored: null,
      source: "webhook",
    });

    const succeeded = await call(
      "GET",
      `/api/notifications?order_id=${orderId}&event=payment.succeeded`,
      admin,
    );
    expect(succeeded.json.items.map((item: any) => item.id)).toEqual([ids[2], ids[0]]);

    const second = await call(
      "GET",
      `/api/notifications?order_id=${orderId}&per_page=2&page=2`,
      admin,
    );
    expect(second.json).toMatchObject({ page: 2, pages: 2, per_page: 2, total: 3 });
    expect(second.json.items.map((item: any) => item.id)).toEqual([ids[0]]);
    const past = await call(
      "GET",
      `/api/notifications?order_id=${orderId}&per_page=2&page=3`,
      admin,
    );
    expect(past.json).toMatchObject({ items: [], page: 3, pages: 2, total: 3 });
    const none = await call("GET", `/api/notifications?order_id=${uniqueOrderId()}`, admin);
    expect(none.json).toEqual({ items: [], page: 1, pages: 0, per_page: 20, total: 0 });
  });

  test("V3: bad page, per_page, order_id or event is 400 naming the parameter", async () => {
    for (const [query, path] of [
      ["page=0", "/page"],
      ["per_page=101", "/per_page"],
      ["per_page=0", "/per_page"],
      ["page=1e1", "/page"],
      ["order_id=abc", "/order_id"],
      ["order_id=0", "/order_id"],
      ["event=", "/event"],
    ]) {
      const answer = await call("GET", `/api/notifications?${query}`, admin);
      expect({ query, status: answer.status }).toEqual({ query, status: 400 });
      expect(answer.json.errors.map((error: any) => error.path)).toContain(path);
    }
  });

  test("V3: one notification with its raw body as received and its queued message; unknown is 404", async () => {
    const id = unique("evt");
    const orderId = uniqueOrderId();
    const raw = `{"event":"payment.succeeded", "order_id":${orderId},"amount":1999,"currency":"USD","id":"${id}","extra":{"kept":true}}`;
    await notify(raw);
    const answer = await call("GET", `/api/notifications/${id}`, admin);
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({
      id,
      event: "payment.succeeded",
      order_id: orderId,
      amount: 1999,
      raw_body: raw,
      published_at: null,
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      message: {
        subject: payments.topology.payments.orderPaid,
        message_id: id,
        published_at: null,
      },
      replays: [],
    });
    const missing = await call("GET", `/api/notifications/${unique("nope")}`, admin);
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toBe(problemType);
  });

  test("V3: a notification whose event makes no message shows none and cannot be replayed (409)", async () => {
    const id = unique("evt");
    await notify(paymentSucceeded(uniqueOrderId(), { id, event: "charge.disputed" }));
    expect((await call("GET", `/api/notifications/${id}`, admin)).json).toMatchObject({
      message: null,
      published_at: null,
      replays: [],
    });
    const replay = await call("POST", `/api/notifications/${id}/replay`, admin);
    expect(replay.status).toBe(409);
    expect(replay.json.detail).toContain("charge.disputed");
    expect(await outboxRows(id)).toHaveLength(0);
    expect((await call("POST", `/api/notifications/${unique("nope")}/replay`, admin)).status).toBe(
      404,
    );
  });
});

describe("operator routes: replay", () => {
  test("V3: replay is 202, queues the same payload under its own message id, is published, shown and logged", async () => {
    const { stream, subjects, orderPaid } = payments.topology.payments;
    const nats = new NatsLink(testNatsUrl, "operator-test", silent);
    await nats.start();
    const jsm = await nats.manager();
    await ensureStream(jsm, { name: stream, subjects });
    const relay = new OutboxRelay({
      sql: payments.sql,
      schema: "payments",
      subjects: [orderPaid],
      jetstream: () => nats.jetstream(),
      logger: silent,
      intervalMs: 50,
    });
    relay.start();
    try {
      const id = unique("evt");
      await notify(paymentSucceeded(uniqueOrderId(), { id }));
      const [original] = await eventually(async () => {
        const rows = await outboxRows(id);
        return rows[0]?.published_at ? rows : undefined;
      });
      const listed = await call(
        "GET",
        `/api/notifications?order_id=${original.payload.order_id}`,
        admin,
      );
      expect(listed.json.items[0].published_at).toBe(original.published_at);

      const operator = unique("op");
      const first = await call(
        "POST",
        `/api/notifications/${id}/replay`,
        await token({ sub: operator, scope: "admin" }),
      );
      expect(first.status).toBe(202);
      expect(first.json).toEqual({
        notification_id: id,
        subject: orderPaid,
        message_id: expect.stringMatching(new RegExp(`^${id}:replay:\\d+$`)),
        requested_at: expect.any(String),
      });
      const second = await call("POST", `/api/notifications/${id}/replay`, admin);
      expect(second.json.message_id).not.toBe(first.json.message_id);

      const rows = await eventually(async () => {
        const found = await outboxRows(id);
        return found.length === 3 && found.every((row) => row.published_at) ? found : undefined;
      });
      expect(rows.map((row) => row.message_id)).toEqual([
        id,
        first.json.message_id,
        second.json.message_id,
      ]);
      for (const row of rows) expect(row.payload).toEqual(original.payload);

      // Each replay is a message of its own on the stream: none was dropped as a repeat.
      const consumer = await nats.jetstream()?.consumers.get(stream);
      const seen: JsMsg[] = [];
      const batch = await consumer?.fetch({ max_messages: 10, expires: 1000 });
      for await (const message of batch ?? []) seen.push(message);
      const ours = seen.filter((m) => m.json<{ notification_id: string }>().notification_id === id);
      expect(ours.map((m) => m.headers?.get("Nats-Msg-Id"))).toEqual(
        rows.map((row) => row.message_id),
      );

      const detail = await call("GET", `/api/notifications/${id}`, admin);
      expect(detail.json.message).toEqual({
        subject: orderPaid,
        message_id: id,
        published_at: original.published_at,
      });
      expect(detail.json.replays).toEqual([
        {
          subject: orderPaid,
          message_id: first.json.message_id,
          published_at: rows[1].published_at,
          requested_at: first.json.requested_at,
        },
        {
          subject: orderPaid,
          message_id: second.json.message_id,
          published_at: rows[2].published_at,
          requested_at: second.json.requested_at,
        },
      ]);

      const logged = payments.logLines
        .map((line) => JSON.parse(line))
        .filter((line) => line.msg === "notification replay" && line.notification_id === id);
      expect(logged).toHaveLength(2);
      expect(logged[0]).toMatchObject({ actor: operator, message_id: first.json.message_id });
    } finally {
      await relay.stop();
      await jsm.streams.delete(stream).catch(() => {});
      await nats.close();
    }
  });
});

describe("operator routes: status (U3, N4)", () => {
  test("U3: an admin reads the outbox backlog and the rows set aside; a customer 403, no token 401", async () => {
    // This service's own subjects, as the gauge counts: other tests' rows share the table.
    const own = payments.topology.payments;
    const [{ dead }] = await payments.sql<{ dead: number }[]>`
      select count(*)::int as dead from payments.outbox where dead_at is not null
        and published_at is null
        and subject = any(${[own.orderPaid, own.orderRefunded, own.orderFailed]})`;
    const res = await call("GET", "/api/status", admin);
    expect(res.status).toBe(200);
    expect(Object.keys(res.json).sort()).toEqual([
      "outbox_backlog",
      "outbox_dead",
      "refused_last_hour",
    ]);
    expect(res.json.outbox_backlog).toBeGreaterThanOrEqual(0);
    expect(res.json.outbox_dead).toBe(dead);
    expect((await call("GET", "/api/status", customer)).status).toBe(403);
    const anonymous = await call("GET", "/api/status");
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("content-type")).toBe(problemType);
  });

  test("N4: the figures are the /metrics gauges' 5-second readings", async () => {
    const status = (await call("GET", "/api/status", admin)).json;
    const metrics = await (
      await payments.app().handle(new Request("http://localhost/metrics"))
    ).text();
    expect(metrics).toContain(`outbox_backlog ${status.outbox_backlog}\n`);
    expect(metrics).toContain(`outbox_dead ${status.outbox_dead}\n`);
  });

  test("U1: the console's origin may read it (CORS), as the other operator routes, not /metrics", async () => {
    const origin = "http://console.example";
    const app = payments.app({ consoleOrigins: [origin] });
    const preflight = await app.handle(
      new Request("http://localhost/api/status", {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "GET" },
      }),
    );
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(origin);
    const read = await app.handle(
      new Request("http://localhost/api/status", {
        headers: { origin, authorization: `Bearer ${admin}` },
      }),
    );
    expect(read.status).toBe(200);
    expect(read.headers.get("access-control-allow-origin")).toBe(origin);
    // N4: /metrics is the scraper's; the console no longer reads it, so no CORS there.
    const scrape = await app.handle(
      new Request("http://localhost/metrics", { headers: { origin } }),
    );
    expect(scrape.headers.get("access-control-allow-origin")).toBeNull();
    await scrape.arrayBuffer();
  });
});

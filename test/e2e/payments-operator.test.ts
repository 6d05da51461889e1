import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { signPayload } from "@commerce/shared/contract/signature";
import { eventually, signToken, unique, webhookSecret } from "@commerce/testing/basics";
import { uniqueOrderId } from "@commerce/testing/payments-requests";
import { type ServiceProcess, type Stack, startStack } from "@commerce/testing/processes";
import {
  paymentIntent,
  providersEnv,
  stripeEvent,
  stripeRequest,
} from "@commerce/testing/provider-requests";

setDefaultTimeout(90_000);

// V4 and V5 on payments, against listening processes: two payments replicas behind one
// database, as a deployment runs them.
let stack: Stack;
let replica: ServiceProcess;
beforeAll(async () => {
  // V5's log line is at info.
  stack = await startStack({ start: ["payments"], env: { ...providersEnv, LOG_LEVEL: "info" } });
  replica = await stack.replica("payments");
});
afterAll(() => stack.stop());

const adminGet = async (path: string, to: ServiceProcess = stack.payments) => {
  const res = await fetch(`${to.url}${path}`, {
    headers: { authorization: `Bearer ${stack.admin}` },
  });
  return { status: res.status, json: (await res.json()) as any };
};

/** A generic notification signed with a secret payments does not know: 401. */
const forged = (to: ServiceProcess, orderId: number) => {
  const raw = JSON.stringify({
    event: "payment.succeeded",
    order_id: orderId,
    amount: 1999,
    currency: "USD",
    id: unique("forged"),
  });
  return fetch(`${to.url}/api/webhooks/payment`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-signature": signPayload(
        raw,
        "not-the-configured-secret-0000",
        Math.floor(Date.now() / 1000),
      ),
    },
    body: raw,
  });
};

/** V4: the refusals route's groups, once `ready` holds for them (replicas write every 2 s). */
const refusalsOnceThere = (query: string, ready: (items: any[]) => boolean) =>
  eventually(
    async () => {
      const answer = await adminGet(`/api/notifications/rejected${query}`);
      return answer.status === 200 && ready(answer.json.items) ? answer.json.items : undefined;
    },
    20_000,
    `refusals ${query}`,
  );
const groupOf = (items: any[], provider: string, reason: string) =>
  items.find((item) => item.provider === provider && item.reason === reason);

describe("refused notifications (V4)", () => {
  test("V4, W7: a flood of 500 forged notifications over two replicas costs a bounded number of database writes; the route shows one group of 500 with the order's first and latest five examples, never a body or a signature", async () => {
    // Counts the statements that write refusals, whatever their rows (a test-only trigger).
    await stack.sql.unsafe(`
      create table if not exists public.refusal_writes (at timestamptz default now());
      create or replace function public.count_refusal_write() returns trigger
        language plpgsql as $$ begin insert into public.refusal_writes default values; return null; end $$;
      drop trigger if exists count_refusal_writes on payments.refused_notifications;
      create trigger count_refusal_writes after insert on payments.refused_notifications
        for each statement execute function public.count_refusal_write();
      truncate public.refusal_writes;`);
    const since = new Date().toISOString();
    const orderId = uniqueOrderId();
    const started = Date.now();
    const statuses: number[] = [];
    for (let batch = 0; batch < 10; batch++)
      statuses.push(
        ...(await Promise.all(
          Array.from({ length: 50 }, async (_, i) => {
            const response = await forged(i % 2 ? replica : stack.payments, orderId);
            await response.body?.cancel();
            return response.status;
          }),
        )),
      );
    expect(statuses.filter((status) => status === 401)).toHaveLength(500);
    // Counts are kept per minute: another test's refusal in the same minute may add to the group.
    const items = await refusalsOnceThere(
      `?since=${encodeURIComponent(since)}&order_id=${orderId}`,
      (found) => groupOf(found, "generic", "signature_mismatch")?.count >= 500,
    );
    const elapsedSeconds = (Date.now() - started) / 1000;
    const group = groupOf(items, "generic", "signature_mismatch");
    expect(items).toHaveLength(1);
    // N21: an order's view keeps its first five and its latest five examples, distinct: the flood
    // spans one flush or several, and two refusals of the same millisecond from the same address
    // are one example, so 1 to 10.
    expect(group.examples.length).toBeGreaterThanOrEqual(1);
    expect(group.examples.length).toBeLessThanOrEqual(10);
    for (const example of group.examples)
      expect(example).toEqual({
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
        source_ip: expect.any(String),
        reason: "signature_mismatch",
        order_id: orderId,
      });
    expect(Date.parse(group.first_at)).toBeLessThanOrEqual(Date.parse(group.last_at));
    expect(JSON.stringify(items)).not.toContain("v1=");
    expect(JSON.stringify(items)).not.toContain("forged_");

    // Each replica writes at most once per 2 s: a bounded number, far from one per request.
    const [{ writes }] = await stack.sql<{ writes: number }[]>`
      select count(*)::int as writes from public.refusal_writes`;
    expect(writes).toBeGreaterThan(0);
    expect(writes).toBeLessThanOrEqual(2 * (Math.ceil(elapsedSeconds / 2) + 2));
    expect(writes).toBeLessThan(50);
    await stack.sql.unsafe(
      "drop trigger if exists count_refusal_writes on payments.refused_notifications",
    );

    // Each replica counted its own half in its metric.
    for (const process of [stack.payments, replica]) {
      const metrics = await (await fetch(`${process.url}/metrics`)).text();
      expect(metrics).toContain(
        'notifications_refused_total{provider="generic",reason="signature_mismatch"} 250',
      );
    }
    const status = await adminGet("/api/status", replica);
    expect(status.json.refused_last_hour).toBeGreaterThanOrEqual(500);
  });

  test("V4: refusals by reason (401 signature, 415, 413, 400) per provider; order_id keeps only the groups with an example for that order, and only those examples", async () => {
    const since = new Date().toISOString();
    const orderId = uniqueOrderId();
    // Stripe: an event for the order signed with another secret.
    const event = stripeEvent("payment_intent.succeeded", paymentIntent(orderId));
    const built = await stripeRequest(event, { secret: "whsec_not_the_one_configured_000" });
    const stripe = await fetch(`${stack.payments.url}/api/webhooks/stripe`, {
      method: "POST",
      headers: built.headers,
      body: await built.text(),
    });
    expect(stripe.status).toBe(401);
    const post = (body: string, contentType: string) =>
      fetch(`${replica.url}/api/webhooks/payment`, {
        method: "POST",
        headers: { "content-type": contentType },
        body,
      });
    expect((await post("{}", "text/plain")).status).toBe(415);
    expect((await post("x".repeat(70 * 1024), "application/json")).status).toBe(413);
    const badJson = "{not json";
    const signed = await fetch(`${replica.url}/api/webhooks/payment`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-signature": signPayload(badJson, webhookSecret, Math.floor(Date.now() / 1000)),
      },
      body: badJson,
    });
    expect(signed.status).toBe(400);

    const items = await refusalsOnceThere(
      `?since=${encodeURIComponent(since)}`,
      (found) =>
        ["unsupported_media_type", "too_large", "invalid_json"].every((reason) =>
          groupOf(found, "generic", reason),
        ) && groupOf(found, "stripe", "signature_mismatch"),
    );
    // At least this test's one: counts are per minute, and another test's may share it.
    for (const reason of ["unsupported_media_type", "too_large", "invalid_json"])
      expect(groupOf(items, "generic", reason).count).toBeGreaterThanOrEqual(1);
    expect(groupOf(items, "stripe", "signature_mismatch").examples[0].order_id).toBe(orderId);

    const forOrder = await adminGet(`/api/notifications/rejected?order_id=${orderId}`);
    expect(forOrder.json.items).toHaveLength(1);
    expect(forOrder.json.items[0]).toMatchObject({
      provider: "stripe",
      reason: "signature_mismatch",
    });
    expect(forOrder.json.items[0].examples).toEqual([
      expect.objectContaining({ order_id: orderId, reason: "signature_mismatch" }),
    ]);
  });

  test("V4: a 429 is not a refusal; bad since or order_id is 400; no token 401, a customer 403", async () => {
    const limited = await stack.replica("payments", { RATE_LIMIT_RPS: "1", RATE_LIMIT_BURST: "1" });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await forged(limited, uniqueOrderId())).status);
    expect(statuses).toContain(429);
    const metrics = await (await fetch(`${limited.url}/metrics`)).text();
    const refused = statuses.filter((status) => status === 401).length;
    expect(metrics).toContain(
      `notifications_refused_total{provider="generic",reason="signature_mismatch"} ${refused}`,
    );
    expect(metrics).not.toContain(
      'notifications_refused_total{provider="generic",reason="rate_limited"}',
    );

    for (const query of ["?since=yesterday", "?order_id=0", "?order_id=x"])
      expect((await adminGet(`/api/notifications/rejected${query}`)).status).toBe(400);
    const anonymous = await fetch(`${stack.payments.url}/api/notifications/rejected`);
    expect(anonymous.status).toBe(401);
    const customer = await fetch(`${stack.payments.url}/api/notifications/rejected`, {
      headers: { authorization: `Bearer ${stack.customer}` },
    });
    expect(customer.status).toBe(403);
  });
});

describe("notification replays are accountable (V5)", () => {
  test("V5: a replay with a note is written to the audit log with the token's sub and the note, and one log line names the actor; GET /api/audit lists it newest first", async () => {
    const event = stripeEvent("payment_intent.succeeded", paymentIntent(uniqueOrderId()));
    const built = await stripeRequest(event);
    await fetch(`${stack.payments.url}/api/webhooks/stripe`, {
      method: "POST",
      headers: built.headers,
      body: await built.text(),
    });
    const operator = unique("ops");
    const token = await signToken(operator, "admin");
    const note = "api database restored from the 03:00 backup";
    const replay = await fetch(`${stack.payments.url}/api/notifications/${event.id}/replay`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ note }),
    });
    expect(replay.status).toBe(202);
    const queued = (await replay.json()) as { notification_id: string; message_id: string };
    expect(queued.notification_id).toBe(`stripe:${event.id}`);

    const audit = await adminGet("/api/audit?per_page=5");
    expect(audit.status).toBe(200);
    expect(audit.json).toMatchObject({ page: 1, per_page: 5 });
    expect(audit.json.items[0]).toEqual({
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      actor: operator,
      action: "notification.replay",
      target: `stripe:${event.id}`,
      detail: { note, message_id: queued.message_id, subject: stack.topology.payments.orderPaid },
    });
    await eventually(
      async () =>
        stack.payments.output.includes('"msg":"notification replay"') &&
        stack.payments.output.includes(`"actor":"${operator}"`)
          ? true
          : undefined,
      10_000,
      "the replay log line",
    );
  });

  test("V5: a replay without a body is still audited (no note); a bad note is 400 and replays nothing", async () => {
    const event = stripeEvent("payment_intent.succeeded", paymentIntent(uniqueOrderId()));
    const built = await stripeRequest(event);
    await fetch(`${stack.payments.url}/api/webhooks/stripe`, {
      method: "POST",
      headers: built.headers,
      body: await built.text(),
    });
    const replayWith = (body?: string) =>
      fetch(`${stack.payments.url}/api/notifications/stripe:${event.id}/replay`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${stack.admin}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body,
      });
    for (const bad of [
      JSON.stringify({ note: "" }),
      JSON.stringify({ note: "x".repeat(1001) }),
      JSON.stringify({ note: 5 }),
      JSON.stringify({ note: "fine", extra: true }),
      JSON.stringify({ note: "bell \u0007" }),
      "[]",
      "{",
    ]) {
      const answer = await replayWith(bad);
      expect({ bad, status: answer.status }).toEqual({ bad, status: 400 });
      expect(answer.headers.get("content-type")).toContain("application/problem+json");
    }
    const replays = () =>
      stack.sql`select 1 from payments.outbox where message_id like ${`stripe:${event.id}:replay:%`}`;
    expect(await replays()).toHaveLength(0);
    expect((await replayWith()).status).toBe(202);
    expect(await replays()).toHaveLength(1);
    const audit = await adminGet("/api/audit?per_page=100");
    const entry = audit.json.items.find((item: any) => item.target === `stripe:${event.id}`);
    expect(entry.detail.note).toBeUndefined();
    expect(entry.actor).toEqual(expect.any(String));
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { eventually } from "@commerce/testing/basics";
import { type ApiHarness, startApi } from "@commerce/testing/in-process";
import { loopbackWebhooks, webhookEndpoints } from "@commerce/testing/webhook-endpoints";
import { AttemptRecorder, recordAttempts } from "./attempt-record";
import { WebhookDispatcher } from "./dispatcher";

// The claims here are made by hand: this api's dispatcher is never started, so every claim and
// every record below is the test's own, and the rows say what each one did.
const webhookEnv = {
  ...loopbackWebhooks,
  WEBHOOK_RETRY_SCHEDULE: "1,1,1",
  WEBHOOK_TIMEOUT_SECONDS: "1",
};

let api: ApiHarness;
const endpoints = webhookEndpoints(() => api.sql);
/** Order ids of these tests' own: deliveries need no order row, only an id to queue on. */
let nextOrder = 1_000_000_000 + Math.floor(Math.random() * 1_000_000_000);

beforeAll(async () => {
  // 8 attempts in flight per endpoint and a claim reading 32 of its due deliveries, as the tests count.
  api = await startApi({
    env: webhookEnv,
    webhookDispatcher: { perEndpoint: 8, scanPerEndpoint: 32 },
  });
});

afterEach(() => endpoints.clear());

afterAll(() => api?.close());

async function endpoint(url = "http://127.0.0.1:9/") {
  const [row] = await api.sql<{ id: number }[]>`
    insert into api.webhook_endpoints (url, events, secret)
    values (${url}, '{*}', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw') returning id::int`;
  return endpoints.add(row.id);
}

type Row = { id: number; order_id: number; event_type: string };

/**
 * `orders` orders' `orders.created` and `orders.paid` deliveries for one endpoint, as a dead
 * endpoint leaves them: `created` attempted and waiting an hour for its retry, `paid` waiting
 * behind it since a minute ago (so due by its own time, older than anything new).
 */
async function deadBacklog(endpointId: number, orders: number) {
  const first = nextOrder;
  nextOrder += orders;
  await api.sql`
    insert into api.webhook_deliveries
      (endpoint_id, event_type, message_id, order_id, payload, attempts, next_attempt_at)
    select ${endpointId}, 'orders.' || event, 'order-' || event || '-' || o, o, '{}',
      case event when 'created' then 1 else 0 end,
      case event when 'created' then now() + interval '1 hour' else now() - interval '1 minute' end
    from generate_series(${first}::bigint, ${first + orders - 1}::bigint) o,
      unnest(array['created', 'paid']) event
    order by o, event = 'paid'`;
}

/** An order's `orders.created` and `orders.paid` for one endpoint, both new. */
async function newOrder(endpointId: number) {
  const order = nextOrder++;
  return api.sql<Row[]>`
    insert into api.webhook_deliveries (endpoint_id, event_type, message_id, order_id, payload)
    select ${endpointId}, 'orders.' || event, 'order-' || event || '-' || ${order}, ${order}, '{}'
    from unnest(array['created', 'paid']) event
    returning id::int, order_id::int, event_type`;
}

/**
 * One claim by hand, of this file's endpoints' deliveries; ids as numbers (the driver gives a
 * bigint as text). A claim takes every enabled endpoint's: other files may leave some enabled in
 * the same database, so the limit leaves room for theirs too.
 */
const claim = async () =>
  (await api.service.dispatcher.claim(100_000))
    .map((row) => ({ ...row, id: Number(row.id), endpoint_id: Number(row.endpoint_id) }))
    .filter((row) => endpoints.has(row.endpoint_id));

describe("claims", () => {
  test("H5: a dead endpoint with thousands pending does not hold up another endpoint's claim, and a claim reads only the first few due deliveries of it", async () => {
    const dead = await endpoint();
    await deadBacklog(dead, 2000);
    const live = await endpoint("http://127.0.0.1:10/");
    const fresh = [...(await newOrder(live)), ...(await newOrder(live))];

    const claimed = await claim();
    const created = fresh.filter((row) => row.event_type === "orders.created");
    expect(claimed.map((row) => row.id).sort()).toEqual(created.map((row) => row.id).sort());

    // The dead endpoint's `paid` deliveries were due (behind their `created`): the claim read
    // 32 (4 × 8 in flight) of them, oldest first, and set those aside until their `created` is
    // attempted again; the other 1968 were not read.
    const deferred = await api.sql<{ order_id: number }[]>`
      select order_id::int from api.webhook_deliveries
      where endpoint_id = ${dead} and event_type = 'orders.paid' and next_attempt_at > now()
      order by order_id`;
    expect(deferred).toHaveLength(32);
    const [{ first }] = await api.sql<{ first: number }[]>`
      select min(order_id)::int as first from api.webhook_deliveries where endpoint_id = ${dead}`;
    expect(deferred.map((row) => row.order_id)).toEqual(
      Array.from({ length: 32 }, (_, i) => first + i),
    );
    const [{ attempted }] = await api.sql<{ attempted: number }[]>`
      select count(*)::int as attempted from api.webhook_deliveries
      where endpoint_id = ${dead} and leased_until is not null`;
    expect(attempted).toBe(0);

    // The next claim reads the next 32, and still takes the live endpoint's new delivery first.
    const later = await newOrder(live);
    expect((await claim()).map((row) => row.id)).toEqual([later[0].id]);
    const [{ count }] = await api.sql<{ count: number }[]>`
      select count(*)::int from api.webhook_deliveries
      where endpoint_id = ${dead} and event_type = 'orders.paid' and next_attempt_at > now()`;
    expect(count).toBe(64);
  });

  test("H5: an order's next delivery waits while the earlier one is attempted, and is due the moment that one is recorded", async () => {
    const hook = await endpoint();
    const [created, paid] = await newOrder(hook);
    const [first] = await claim();
    expect(first.id).toBe(created.id);
    expect(await claim()).toEqual([]);

    await recordAttempts(api.sql, api.service.deps.webhooks, [
      {
        delivery: first,
        result: { statusCode: 204, durationMs: 3, error: null, responseBody: "" },
        outcome: "succeeded",
      },
    ]);
    expect((await claim()).map((row) => row.id)).toEqual([paid.id]);
  });

  test("H5: at most 8 attempts in flight per endpoint, counted from the leases", async () => {
    const hook = await endpoint();
    for (let i = 0; i < 10; i++) await newOrder(hook);
    expect(await claim()).toHaveLength(8);
    expect(await claim()).toHaveLength(0);
    // As a killed api leaves them once their time is up (a claim moves the next attempt there too).
    await api.sql`update api.webhook_deliveries
      set leased_until = now() - interval '1 second', next_attempt_at = now() - interval '1 second'
      where endpoint_id = ${hook} and leased_until is not null`;
    // Expired leases hold no slot, and their deliveries are due again: 8 others or the same.
    expect(await claim()).toHaveLength(8);
  });
});

describe("attempt records", () => {
  test("H3, H4: a batch of attempts in one statement: each on the log, each delivery moved by its own outcome, a lost lease moves nothing, a 410 disables its endpoint", async () => {
    const ok = await endpoint();
    const gone = await endpoint("http://127.0.0.1:11/");
    for (let i = 0; i < 3; i++) await newOrder(ok);
    await newOrder(gone);
    const claimed = await claim();
    const okRows = claimed.filter((row) => row.endpoint_id === ok);
    const goneRow = claimed.find((row) => row.endpoint_id === gone);
    expect(okRows).toHaveLength(3);
    if (!goneRow) throw new Error("the gone endpoint's delivery was not claimed");
    const answer = (statusCode: number | null, error: string | null = null) => ({
      statusCode,
      durationMs: 5,
      error,
      responseBody: statusCode === null ? null : `answer ${statusCode}`,
    });
    await recordAttempts(api.sql, api.service.deps.webhooks, [
      { delivery: okRows[0], result: answer(200), outcome: "succeeded" },
      { delivery: okRows[1], result: answer(null, "timeout"), outcome: "retrying" },
      {
        delivery: { ...okRows[2], lease: "2000-01-01 00:00:00+00" },
        result: answer(500),
        outcome: "retrying",
      },
      { delivery: goneRow, result: answer(410), outcome: "retrying" },
    ]);

    const rows = await api.sql<{ id: number; status: string; attempts: number; leased: boolean }[]>`
      select id::int, status, attempts, leased_until is not null as leased
      from api.webhook_deliveries where id = any(${claimed.map((row) => row.id)}) order by id`;
    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(byId.get(okRows[0].id)).toMatchObject({ status: "succeeded", attempts: 1 });
    expect(byId.get(okRows[1].id)).toMatchObject({ status: "pending", attempts: 1, leased: false });
    // Not the lease it holds: the delivery is left to whoever does.
    expect(byId.get(okRows[2].id)).toMatchObject({ status: "pending", attempts: 0, leased: true });
    expect(byId.get(goneRow.id)).toMatchObject({ status: "pending", attempts: 1 });

    const log = await api.sql<
      { delivery_id: number; status_code: number | null; error: string | null }[]
    >`
      select delivery_id::int, status_code, error from api.webhook_attempts
      where delivery_id = any(${claimed.map((row) => row.id)}) order by id`;
    expect([...log]).toEqual([
      { delivery_id: okRows[0].id, status_code: 200, error: null },
      { delivery_id: okRows[1].id, status_code: null, error: "timeout" },
      { delivery_id: okRows[2].id, status_code: 500, error: null },
      { delivery_id: goneRow.id, status_code: 410, error: null },
    ]);
    const states = await api.sql<{ id: number; status: string; disabled_reason: string | null }[]>`
      select id::int, status, disabled_reason from api.webhook_endpoints
      where id in (${ok}, ${gone}) order by id`;
    expect([...states]).toEqual([
      { id: ok, status: "enabled", disabled_reason: null },
      { id: gone, status: "disabled", disabled_reason: "gone" },
    ]);
  });

  test("H9, N15: an attempt that cannot be recorded fails alone: the others of its batch are on the log once each and their deliveries move", async () => {
    const healthy = [await endpoint(), await endpoint(), await endpoint()];
    const poisoned = await endpoint("http://127.0.0.1:12/");
    for (const id of [...healthy, poisoned]) await newOrder(id);
    const claimed = await claim();
    const first = (endpointId: number) => {
      const row = claimed.find(
        (r) => r.endpoint_id === endpointId && r.event_type === "orders.created",
      );
      if (!row) throw new Error(`endpoint ${endpointId}'s delivery was not claimed`);
      return row;
    };
    const recorder = new AttemptRecorder(api.sql, api.service.deps.webhooks);
    const answer = (body: string) => ({
      statusCode: 200,
      durationMs: 5,
      error: null,
      responseBody: body,
    });
    // The first is written at once; the next three, the bad one among them, share one batch.
    const outcomes = await Promise.allSettled([
      recorder.record(first(healthy[0]), answer("ok")),
      recorder.record(first(poisoned), answer("a NUL \u0000 PostgreSQL text cannot hold")),
      recorder.record(first(healthy[1]), answer("ok")),
      recorder.record(first(healthy[2]), answer("ok")),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual([
      "fulfilled",
      "rejected",
      "fulfilled",
      "fulfilled",
    ]);
    const log = await api.sql<{ endpoint_id: number; attempts: number; status: string }[]>`
      select d.endpoint_id::int, count(a.id)::int as attempts, d.status
      from api.webhook_deliveries d left join api.webhook_attempts a on a.delivery_id = d.id
      where d.id = any(${[...healthy, poisoned].map((id) => first(id).id)})
      group by d.id order by d.endpoint_id`;
    expect([...log]).toEqual([
      ...healthy.map((id) => ({ endpoint_id: id, attempts: 1, status: "succeeded" })),
      { endpoint_id: poisoned, attempts: 0, status: "pending" },
    ]);
  });
});

describe("stop and start", () => {
  test("H6, O7: a dispatcher stopped while its next claim waited for its spacing claims again when started again", async () => {
    const receiver = await endpoints.receiver();
    const id = await endpoint(receiver.url);
    const { sql, webhooks, logger } = api.deps;
    // A poll every 20 ms, and 2 s between claims that find nothing: the first claim finds
    // nothing, and the poll's next one waits for its spacing when the dispatcher stops.
    const dispatcher = new WebhookDispatcher(
      { sql, config: webhooks, logger, metrics: api.service.webhookMetrics },
      { pollMs: 20, idleClaimSpacingMs: 2_000 },
    );
    dispatcher.start();
    await Bun.sleep(300);
    await dispatcher.stop();
    const [created] = await newOrder(id);
    dispatcher.start();
    try {
      const heard = await eventually(
        async () => (receiver.received.length >= 2 ? receiver.received : undefined),
        10_000,
        "both deliveries after the restart",
      );
      expect(heard.map((r) => r.id).sort()).toEqual([
        `order-created-${created.order_id}`,
        `order-paid-${created.order_id}`,
      ]);
    } finally {
      await dispatcher.stop();
    }
  });
});

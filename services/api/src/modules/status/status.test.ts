import { describe, expect, test } from "bun:test";
import { RateLimiter } from "@commerce/shared/platform/rate-limit";
import { eventually } from "@commerce/testing/basics";
import { apiForFile, problemType, startApi } from "@commerce/testing/in-process";
import { webhookEndpoints } from "@commerce/testing/webhook-endpoints";

const { api, admin } = await apiForFile();
const endpoints = webhookEndpoints(() => api.sql);

const figures = [
  "outbox_backlog",
  "outbox_dead",
  "payment_consumer_lag",
  "open_reviews",
  "failing_endpoints",
  "disabled_endpoints",
  "oldest_pending_delivery_seconds",
];

describe("GET /api/status (U3, N4)", () => {
  test("U3: an admin reads the health line's figures, counted over every endpoint and review", async () => {
    const [{ open }] = await api.sql<{ open: number }[]>`
      select count(*)::int as open from api.payment_reviews where status = 'open'`;
    // U7: failing now = enabled, and the last attempt failed or a delivery waits over 5 minutes.
    const [{ failing, disabled }] = await api.sql<{ failing: number; disabled: number }[]>`
      select count(*) filter (where e.status = 'enabled' and (e.failing_since is not null
          or exists (select from api.webhook_deliveries d where d.endpoint_id = e.id
            and d.status = 'pending' and d.created_at < now() - interval '5 minutes')))::int
          as failing,
        count(*) filter (where e.status = 'disabled')::int as disabled
      from api.webhook_endpoints e`;
    const res = await api.call("GET", "/api/status", { token: admin });
    expect(res.status).toBe(200);
    expect(Object.keys(res.json).sort()).toEqual([...figures].sort());
    expect(res.json).toMatchObject({
      open_reviews: open,
      failing_endpoints: failing,
      disabled_endpoints: disabled,
    });
    expect(res.json.outbox_backlog).toBeGreaterThanOrEqual(0);
    expect(res.json.outbox_dead).toBeGreaterThanOrEqual(0);
    // In-process NATS is not started: the consumer's lag cannot be read, and says so.
    expect(res.json.payment_consumer_lag).toBeNull();
  });

  test("N4: the figures are the gauges' 5-second readings, the same /metrics shows", async () => {
    const before = (await api.call("GET", "/api/status", { token: admin })).json;
    const [{ id }] = await api.sql<{ id: string }[]>`
      insert into api.webhook_endpoints (url, events, status, disabled_reason, secret)
      values ('https://status-test.example/hook', '{order.paid}', 'disabled', 'failing', 'whsec_x')
      returning id`;
    endpoints.add(id);
    try {
      const again = (await api.call("GET", "/api/status", { token: admin })).json;
      expect(again.disabled_endpoints).toBe(before.disabled_endpoints);
      const metrics = (await api.call("GET", "/metrics")).text;
      expect(metrics).toContain(`webhook_endpoints_disabled ${before.disabled_endpoints}`);
      expect(metrics).toContain(`webhook_endpoints_failing_now ${before.failing_endpoints}`);
    } finally {
      await endpoints.clear();
    }
  });

  test("U7: each endpoint's failing_now is the health line's rule: true after a failed attempt or a delivery pending over 5 minutes, false when healthy or disabled; the failing ones are failing_endpoints", async () => {
    const made: number[] = [];
    // Each delivery is due tomorrow, so no dispatcher of any process attempts it meanwhile.
    const endpoint = async (status: string, failingSince: string | null, pendingSince?: string) => {
      const [{ id }] = await api.sql<{ id: number }[]>`
        insert into api.webhook_endpoints (url, events, status, disabled_reason, failing_since, secret)
        values ('https://failing-now.example/hook', '{orders.paid}', ${status},
          ${status === "disabled" ? "manual" : null}, ${failingSince}, 'whsec_x')
        returning id::int`;
      made.push(id);
      if (pendingSince)
        await api.sql`insert into api.webhook_deliveries
          (endpoint_id, event_type, message_id, payload, created_at, next_attempt_at)
          values (${id}, 'orders.paid', ${`failing-now-${id}`}, '{}',
            now() - ${pendingSince}::interval, now() + interval '1 day')`;
      return id;
    };
    try {
      const healthy = await endpoint("enabled", null, "1 minute");
      const streak = await endpoint("enabled", new Date().toISOString());
      const stuck = await endpoint("enabled", null, "6 minutes");
      const disabled = await endpoint("disabled", new Date().toISOString(), "6 minutes");

      const expected = { [healthy]: false, [streak]: true, [stuck]: true, [disabled]: false };
      for (const [id, failing] of Object.entries(expected)) {
        const one = await api.call("GET", `/api/webhook-endpoints/${id}`, { token: admin });
        expect(one.status).toBe(200);
        expect({ id, failing_now: one.json.failing_now }).toEqual({ id, failing_now: failing });
      }
      // Every endpoint of the list, page by page; those failing now are the health line's count
      // (a 5-second reading, so read again until it has seen these endpoints).
      const listed = async () => {
        const all: { id: number; failing_now: boolean }[] = [];
        for (let page = 1; ; page++) {
          const res = await api.call("GET", `/api/webhook-endpoints?page=${page}&per_page=100`, {
            token: admin,
          });
          all.push(...res.json.items);
          if (page >= res.json.pages) return all;
        }
      };
      const agreed = await eventually(
        async () => {
          const all = await listed();
          const status = (await api.call("GET", "/api/status", { token: admin })).json;
          const failing = all.filter((e) => e.failing_now).length;
          return status.failing_endpoints === failing ? all : undefined;
        },
        15_000,
        "failing_endpoints equal to the endpoints listed with failing_now",
      );
      const mine = agreed.filter((e) => made.includes(e.id));
      expect(Object.fromEntries(mine.map((e) => [e.id, e.failing_now]))).toEqual(expected);
    } finally {
      // Deleted even when the test fails: no endpoint of this test stays in the database.
      await api.sql`delete from api.webhook_endpoints where id in ${api.sql(made)}`;
    }
  });

  test("U3: a customer token is 403, no token 401, both problem+json", async () => {
    const customer = await api.customer();
    const forbidden = await api.call("GET", "/api/status", { token: customer.token });
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers.get("content-type")).toBe(problemType);
    const anonymous = await api.call("GET", "/api/status");
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("content-type")).toBe(problemType);
    expect(anonymous.json).not.toHaveProperty("outbox_backlog");
  });

  test("U3: rate limited per token like the other operator routes", async () => {
    const limited = await startApi({
      replace: { rateLimiter: new RateLimiter({ ratePerSecond: 1, burst: 2 }) },
    });
    try {
      const token = await limited.admin();
      const statuses = [];
      for (let i = 0; i < 3; i++)
        statuses.push((await limited.call("GET", "/api/status", { token })).status);
      expect(statuses).toEqual([200, 200, 429]);
    } finally {
      await limited.close();
    }
  });
});

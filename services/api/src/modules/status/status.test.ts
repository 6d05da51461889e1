import { describe, expect, test } from "bun:test";
import { RateLimiter } from "@commerce/shared/platform/rate-limit";
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

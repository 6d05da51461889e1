import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { lookup } from "node:dns/promises";
import { hostname } from "node:os";
import { eventually, unique } from "@commerce/testing/basics";
import { type ApiHarness, apiForFile, startApi } from "@commerce/testing/in-process";
import { loopbackWebhooks, webhookEndpoints } from "@commerce/testing/webhook-endpoints";
import { type Answer, verifyDelivery } from "@commerce/testing/webhook-receiver";
import { isInternalAddress } from "./address-guard";

setDefaultTimeout(60_000);

const webhookEnv = {
  ...loopbackWebhooks,
  WEBHOOK_RETRY_SCHEDULE: "1,1,1",
  WEBHOOK_TIMEOUT_SECONDS: "1",
};

const { api, admin: adminToken } = await apiForFile({
  env: webhookEnv,
  webhookDispatcher: { pollMs: 50 },
});
api.service.dispatcher.start();

const hooks = webhookEndpoints(
  () => api.sql,
  (body) => api.call("POST", "/api/webhook-endpoints", { token: adminToken, body }),
);
const receiver = hooks.receiver;
const subscribe = (url: string, events: string[] = ["*"]) => hooks.subscribe(url, events, "test");

// Each test's endpoints go (even when it failed), so later tests' orders are not delivered to
// dead receivers, and none is left in the shared database.
afterEach(() => hooks.clear());

/** An order created by a customer and paid by an admin: `orders.created`, then `orders.paid`. */
async function paidOrder(): Promise<number> {
  const product = await api.product({ price: 500 });
  const customer = await api.customer();
  const created = await api.call("POST", "/api/orders", {
    token: customer.token,
    body: { product_id: product.id, qty: 1 },
  });
  expect(created.status).toBe(201);
  const paid = await api.call("PATCH", `/api/orders/${created.json.order_id}`, {
    token: adminToken,
    body: { status: "paid", note: "paid by bank transfer" },
  });
  expect(paid.status).toBe(200);
  return created.json.order_id;
}

const deliveryRows = (endpointId: number) =>
  api.sql<{ id: number; message_id: string; status: string; attempts: number }[]>`
    select id::int, message_id, status, attempts from api.webhook_deliveries
    where endpoint_id = ${endpointId} order by id`;

describe("webhook endpoints", () => {
  test("H1: an admin creates, lists, reads, changes and deletes endpoints; the secret is in the 201 only; a customer gets 403", async () => {
    const hook = await receiver();
    const created = hooks.kept(
      await api.call("POST", "/api/webhook-endpoints", {
        token: adminToken,
        body: { url: hook.url, events: ["orders.paid"], description: "warehouse" },
      }),
    );
    expect(created.status).toBe(201);
    expect(created.headers.get("location")).toBe(`/api/webhook-endpoints/${created.json.id}`);
    expect(created.json.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.json.secret.slice(6), "base64")).toHaveLength(32);
    expect(created.json).toMatchObject({
      url: hook.url,
      events: ["orders.paid"],
      description: "warehouse",
      status: "enabled",
      disabled_reason: null,
    });

    const read = await api.call("GET", `/api/webhook-endpoints/${created.json.id}`, {
      token: adminToken,
    });
    expect(read.status).toBe(200);
    expect(read.json.secret).toBeUndefined();
    const list = await api.call("GET", "/api/webhook-endpoints?per_page=100", {
      token: adminToken,
    });
    expect(list.json.items.find((e: { id: number }) => e.id === created.json.id)).toBeDefined();
    expect(list.text).not.toContain(created.json.secret);

    const changed = await api.call("PATCH", `/api/webhook-endpoints/${created.json.id}`, {
      token: adminToken,
      body: { events: ["*"], status: "disabled" },
    });
    expect(changed.json).toMatchObject({
      events: ["*"],
      status: "disabled",
      disabled_reason: "manual",
    });
    const badEvent = hooks.kept(
      await api.call("POST", "/api/webhook-endpoints", {
        token: adminToken,
        body: { url: hook.url, events: ["orders.shipped"] },
      }),
    );
    expect(badEvent.status).toBe(400);

    const customer = await api.customer();
    for (const [method, path] of [
      ["GET", "/api/webhook-endpoints"],
      ["GET", `/api/webhook-endpoints/${created.json.id}`],
      ["POST", `/api/webhook-endpoints/${created.json.id}/rotate-secret`],
    ])
      expect((await api.call(method, path, { token: customer.token })).status).toBe(403);

    const deleted = await api.call("DELETE", `/api/webhook-endpoints/${created.json.id}`, {
      token: adminToken,
    });
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe("");
    expect(
      (await api.call("GET", `/api/webhook-endpoints/${created.json.id}`, { token: adminToken }))
        .status,
    ).toBe(404);
  });

  test("H1: deleting an endpoint while its deliveries are being attempted answers 204 (no deadlock with the dispatcher)", async () => {
    const slow = await receiver(() => ({ status: 500, delayMs: 200 }));
    const endpoint = await subscribe(slow.url);
    for (let i = 0; i < 4; i++) await paidOrder();
    await eventually(async () => (slow.received.length >= 2 ? true : undefined));
    const deleted = await api.call("DELETE", `/api/webhook-endpoints/${endpoint.id}`, {
      token: adminToken,
    });
    expect(deleted.status).toBe(204);
    expect(await deliveryRows(endpoint.id)).toHaveLength(0);
  });

  test("H2: every orders.* event reaches every enabled endpoint subscribed to it, as {type, timestamp, data} with webhook-id the M3 message id; the standardwebhooks library verifies every delivery", async () => {
    const all = await receiver();
    const paidOnly = await receiver();
    const disabled = await receiver();
    const everything = await subscribe(all.url);
    const onlyPaid = await subscribe(paidOnly.url, ["orders.paid"]);
    const off = await subscribe(disabled.url);
    await api.call("PATCH", `/api/webhook-endpoints/${off.id}`, {
      token: adminToken,
      body: { status: "disabled" },
    });

    const orderId = await paidOrder();
    await eventually(async () => (all.forOrder(orderId).length === 2 ? true : undefined));
    await eventually(async () => (paidOnly.forOrder(orderId).length === 1 ? true : undefined));

    const [created, paid] = all.forOrder(orderId);
    expect(created.json.type).toBe("orders.created");
    expect(paid.json.type).toBe("orders.paid");
    expect(created.id).toBe(`order-created-${orderId}`);
    expect(paid.id).toBe(`order-paid-${orderId}`);
    expect(paid.json.data).toMatchObject({ order_id: orderId, status: "paid", amount: 500 });
    expect(paid.json.data.paid_at).toBeString();
    expect(new Date(paid.json.timestamp).toISOString()).toBe(paid.json.timestamp);
    expect(paid.headers["content-type"]).toBe("application/json");
    for (const request of all.forOrder(orderId))
      expect(verifyDelivery(everything.secret, request)).toEqual(request.json);
    expect(verifyDelivery(onlyPaid.secret, paidOnly.forOrder(orderId)[0])).toBeDefined();
    expect(() => verifyDelivery(onlyPaid.secret, paid)).toThrow();
    expect(paidOnly.forOrder(orderId)[0].json.type).toBe("orders.paid");

    // The disabled endpoint was not subscribed when the events happened: nothing for it, ever.
    expect(await deliveryRows(off.id)).toHaveLength(0);
    expect(disabled.received).toHaveLength(0);
  });

  test("H1, H2: after rotate-secret deliveries carry two signatures for 24 hours; the library verifies each under the old secret and under the new one", async () => {
    const hook = await receiver();
    const endpoint = await subscribe(hook.url, ["orders.paid"]);
    const rotated = await api.call("POST", `/api/webhook-endpoints/${endpoint.id}/rotate-secret`, {
      token: adminToken,
    });
    expect(rotated.status).toBe(200);
    expect(rotated.json.secret).toMatch(/^whsec_/);
    expect(rotated.json.secret).not.toBe(endpoint.secret);

    const orderId = await paidOrder();
    const [delivery] = await eventually(async () => {
      const got = hook.forOrder(orderId);
      return got.length ? got : undefined;
    });
    expect(delivery.signature.split(" ")).toHaveLength(2);
    expect(verifyDelivery(rotated.json.secret, delivery)).toBeDefined();
    expect(verifyDelivery(endpoint.secret, delivery)).toBeDefined();

    // After the 24 hours only the new secret signs.
    await api.sql`update api.webhook_endpoints set previous_secret_until = now() - interval '1 second' where id = ${endpoint.id}`;
    const later = await paidOrder();
    const [next] = await eventually(async () => {
      const got = hook.forOrder(later);
      return got.length ? got : undefined;
    });
    expect(next.signature.split(" ")).toHaveLength(1);
    expect(verifyDelivery(rotated.json.secret, next)).toBeDefined();
    expect(() => verifyDelivery(endpoint.secret, next)).toThrow();
  });
});

describe("retries and health", () => {
  test("H3: 500s are retried after each delay of WEBHOOK_RETRY_SCHEDULE with the same webhook-id until a 2xx; after the last delay the delivery is failed", async () => {
    const flaky = await receiver((_, n) => (n <= 2 ? { status: 500 } : { status: 204 }));
    const endpoint = await subscribe(flaky.url, ["orders.paid"]);
    const orderId = await paidOrder();
    await eventually(async () => (flaky.forOrder(orderId).length === 3 ? true : undefined), 15_000);
    const tries = flaky.forOrder(orderId);
    expect(new Set(tries.map((t) => t.id))).toEqual(new Set([`order-paid-${orderId}`]));
    // The schedule is 1 s between attempts.
    expect(tries[1].at - tries[0].at).toBeGreaterThanOrEqual(900);
    for (const request of tries) expect(verifyDelivery(endpoint.secret, request)).toBeDefined();
    await eventually(async () => {
      const [row] = await deliveryRows(endpoint.id);
      return row.status === "succeeded" ? row : undefined;
    });

    const dead = await receiver(() => ({ status: 503 }));
    const failing = await subscribe(dead.url, ["orders.paid"]);
    const another = await paidOrder();
    const [row] = await eventually(
      async () => {
        const rows = await deliveryRows(failing.id);
        return rows[0]?.status === "failed" ? rows : undefined;
      },
      40_000,
      "the delivery to fail",
    );
    // One attempt and one after each of the schedule's three delays.
    expect(row.attempts).toBe(4);
    expect(dead.forOrder(another)).toHaveLength(4);
  });

  test("H3: an attempt is cut at WEBHOOK_TIMEOUT_SECONDS; a hang-up, a refused connection and a redirect (not followed) are failed attempts", async () => {
    const answers: Answer[] = [
      { hang: true },
      { hangUp: true },
      { status: 302, headers: { location: "http://127.0.0.1:1/elsewhere" } },
      { status: 200 },
    ];
    const hook = await receiver((_, n) => answers[n - 1] ?? { status: 200 });
    const endpoint = await subscribe(hook.url, ["orders.paid"]);
    const orderId = await paidOrder();
    const delivery = await eventually(
      async () => {
        const [row] = await deliveryRows(endpoint.id);
        return row?.status === "succeeded" ? row : undefined;
      },
      20_000,
      "the delivery to succeed",
    );
    const log = await api.call(
      "GET",
      `/api/webhook-endpoints/${endpoint.id}/deliveries/${delivery.id}`,
      { token: adminToken },
    );
    expect(log.json.attempts_log.map((a: { error: string }) => a.error)).toEqual([
      "timeout",
      "connection_reset",
      null,
      null,
    ]);
    expect(log.json.attempts_log[0].duration_ms).toBeGreaterThanOrEqual(950);
    expect(log.json.attempts_log[0].duration_ms).toBeLessThan(3000);
    expect(log.json.attempts_log.map((a: { status_code: number }) => a.status_code)).toEqual([
      null,
      null,
      302,
      200,
    ]);
    expect(hook.forOrder(orderId)).toHaveLength(4);

    const gone = await receiver();
    const refusedUrl = gone.url;
    await gone.close();
    const refused = await subscribe(refusedUrl, ["orders.paid"]);
    await paidOrder();
    const [first] = await eventually(async () => {
      const [row] = await deliveryRows(refused.id);
      return row?.attempts ? [row] : undefined;
    });
    const refusedLog = await api.call(
      "GET",
      `/api/webhook-endpoints/${refused.id}/deliveries/${first.id}`,
      { token: adminToken },
    );
    expect(refusedLog.json.attempts_log[0].error).toBe("connection_refused");
  });

  test("H3: 410 Gone disables the endpoint at once (gone); an endpoint failing longer than WEBHOOK_DISABLE_AFTER_SECONDS is disabled (failing); enabling it resumes its pending deliveries", async () => {
    const goneHook = await receiver(() => ({ status: 410 }));
    const gone = await subscribe(goneHook.url, ["orders.paid"]);
    await paidOrder();
    await eventually(async () => {
      const read = await api.call("GET", `/api/webhook-endpoints/${gone.id}`, {
        token: adminToken,
      });
      return read.json.status === "disabled" ? read.json : undefined;
    }).then((endpoint) => expect(endpoint.disabled_reason).toBe("gone"));

    let healthy = false;
    const failingHook = await receiver(() => ({ status: healthy ? 200 : 500 }));
    const failing = await subscribe(failingHook.url, ["orders.paid"]);
    // As if its attempts had failed for six days (the default limit is five).
    await api.sql`update api.webhook_endpoints set failing_since = now() - interval '6 days' where id = ${failing.id}`;
    const orderId = await paidOrder();
    await eventually(async () => {
      const read = await api.call("GET", `/api/webhook-endpoints/${failing.id}`, {
        token: adminToken,
      });
      return read.json.status === "disabled" ? read.json : undefined;
    }).then((endpoint) => expect(endpoint.disabled_reason).toBe("failing"));
    const [pending] = await deliveryRows(failing.id);
    expect(pending.status).toBe("pending");
    await api.sql`update api.webhook_deliveries set next_attempt_at = now() where id = ${pending.id}`;
    await Bun.sleep(300);
    expect(failingHook.forOrder(orderId)).toHaveLength(1);

    healthy = true;
    const enabled = await api.call("PATCH", `/api/webhook-endpoints/${failing.id}`, {
      token: adminToken,
      body: { status: "enabled" },
    });
    expect(enabled.json).toMatchObject({ status: "enabled", disabled_reason: null });
    await eventually(async () => {
      const [row] = await deliveryRows(failing.id);
      return row.status === "succeeded" ? row : undefined;
    });
    expect(failingHook.forOrder(orderId)).toHaveLength(2);
  });
});

describe("the delivery log", () => {
  test("H4: a page of deliveries and its total come from one snapshot while deliveries are written", async () => {
    const hook = await receiver();
    // Subscribed to an event no test order raises: only the rows written here are its deliveries.
    const endpoint = await subscribe(hook.url, ["orders.refunded"]);
    let written = 0;
    const writer = (async () => {
      for (; written < 99; written++) {
        await api.sql`
          insert into api.webhook_deliveries (endpoint_id, event_type, message_id, payload, status)
          values (${endpoint.id}, 'orders.refunded', ${`snapshot-${written}`}, '{}', 'succeeded')`;
        await Bun.sleep(1);
      }
    })();
    const pages: { items: unknown[]; total: number }[] = [];
    while (written < 99) {
      const list = await api.call(
        "GET",
        `/api/webhook-endpoints/${endpoint.id}/deliveries?per_page=100`,
        { token: adminToken },
      );
      pages.push(list.json);
    }
    await writer;
    expect(pages.length).toBeGreaterThan(10);
    expect(pages.filter((page) => page.items.length !== page.total)).toEqual([]);
  });

  test("N22 (v5): ten concurrent manual retries of one delivery make ten attempts one after another, each recorded; recover waits for an attempt in flight", async () => {
    // The dispatcher's attempts fail at once; the retries' are answered after 150 ms.
    let slow = false;
    const hook = await receiver(() => ({ status: 500, delayMs: slow ? 150 : 0 }));
    const endpoint = await subscribe(hook.url, ["orders.created"]);
    await paidOrder();
    const [delivery] = await eventually(
      async () => {
        const rows = await deliveryRows(endpoint.id);
        return rows.length === 1 && rows[0].status === "failed" ? rows : undefined;
      },
      40_000,
      "the delivery to fail",
    );
    const before = hook.received.length;
    slow = true;
    const retry = () =>
      api.call("POST", `/api/webhook-endpoints/${endpoint.id}/deliveries/${delivery.id}/retry`, {
        token: adminToken,
      });
    const retries = Array.from({ length: 10 }, retry);
    const answers = await Promise.all(retries);
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(202));
    expect(answers.every((a) => a.json.attempt.outcome === "failed")).toBe(true);
    // Ten requests reached the receiver, none while another was being answered (150 ms each).
    const arrivals = hook.received.slice(before, before + 10).map((r) => r.at);
    expect(arrivals).toHaveLength(10);
    for (let i = 1; i < arrivals.length; i++)
      expect(arrivals[i] - arrivals[i - 1]).toBeGreaterThanOrEqual(140);
    const [row] = await api.sql<{ manual: number; logged: number }[]>`
      select d.manual_attempts as manual,
        (select count(*)::int from api.webhook_attempts a where a.delivery_id = d.id) as logged
      from api.webhook_deliveries d where d.id = ${delivery.id}`;
    expect(row.manual).toBe(10);
    expect(row.logged).toBe(delivery.attempts + 10);

    // Recover waits for an attempt in flight (here: the delivery's row held by the test) and then
    // queues the delivery as it finds it.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked = () => {};
    const lockTaken = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const holder = api.sql.begin(async (tx) => {
      await tx`select id from api.webhook_deliveries where id = ${delivery.id} for update`;
      locked();
      await held;
    });
    await lockTaken;
    let settled = false;
    const recovered = api
      .call("POST", `/api/webhook-endpoints/${endpoint.id}/recover`, {
        token: adminToken,
        body: { since: new Date(Date.now() - 3_600_000).toISOString() },
      })
      .finally(() => {
        settled = true;
      });
    await Bun.sleep(500);
    expect(settled).toBe(false);
    release();
    await holder;
    expect(await recovered).toMatchObject({ status: 202, json: { queued: 1 } });
  });

  test("H4: deliveries newest first with every attempt (status, duration, error, the first KiB of the answer); retry attempts a failed one now; test sends webhook.test", async () => {
    let fail = true;
    const hook = await receiver(() =>
      fail ? { status: 500, body: "x".repeat(5000) } : { status: 200, body: "ok" },
    );
    const endpoint = await subscribe(hook.url);
    const orderId = await paidOrder();
    const failed = await eventually(
      async () => {
        const list = await api.call(
          "GET",
          `/api/webhook-endpoints/${endpoint.id}/deliveries?status=failed`,
          { token: adminToken },
        );
        return list.json.total === 2 ? list.json : undefined;
      },
      20_000,
      "both deliveries to fail",
    );
    expect(failed.items.map((d: { event_type: string }) => d.event_type)).toEqual([
      "orders.paid",
      "orders.created",
    ]);
    expect(failed.items[0]).toMatchObject({
      message_id: `order-paid-${orderId}`,
      order_id: orderId,
      status: "failed",
      attempts: 4,
      next_attempt_at: null,
      last_status_code: 500,
    });
    const ofOrder = await api.call(
      "GET",
      `/api/webhook-endpoints/${endpoint.id}/deliveries?order_id=${orderId}`,
      { token: adminToken },
    );
    expect(ofOrder.json.items.map((d: { id: number }) => d.id)).toEqual(
      failed.items.map((d: { id: number }) => d.id),
    );
    const one = await api.call(
      "GET",
      `/api/webhook-endpoints/${endpoint.id}/deliveries/${failed.items[0].id}`,
      { token: adminToken },
    );
    expect(one.json.attempts_log).toHaveLength(4);
    expect(one.json.attempts_log[0]).toMatchObject({ status_code: 500, error: null });
    expect(one.json.attempts_log[0].response_body).toBe("x".repeat(1024));
    expect(one.json.attempts_log[0].duration_ms).toBeNumber();

    fail = false;
    const retried = await api.call(
      "POST",
      `/api/webhook-endpoints/${endpoint.id}/deliveries/${failed.items[1].id}/retry`,
      { token: adminToken },
    );
    expect(retried.status).toBe(202);
    await eventually(async () => {
      const read = await api.call(
        "GET",
        `/api/webhook-endpoints/${endpoint.id}/deliveries/${failed.items[1].id}`,
        { token: adminToken },
      );
      return read.json.status === "succeeded" ? read.json : undefined;
    }).then((delivery) => expect(delivery.attempts_log.at(-1).response_body).toBe("ok"));

    const tested = await api.call("POST", `/api/webhook-endpoints/${endpoint.id}/test`, {
      token: adminToken,
    });
    expect(tested.status).toBe(202);
    const ping = await eventually(async () =>
      hook.received.find((r) => r.json.type === "webhook.test"),
    );
    expect(verifyDelivery(endpoint.secret, ping)).toMatchObject({ type: "webhook.test" });
    expect(ping.id).toBe(tested.json.message_id);
  });
});

describe("order per order", () => {
  test("H5: one order's events reach an endpoint in the order they happened, the next waiting while the first is retried; other orders and a dead endpoint do not wait", async () => {
    let slowOrder = 0;
    let refusedFirst = false;
    const hook = await receiver((request) => {
      if (request.json.data.order_id === slowOrder && !refusedFirst) {
        refusedFirst = true;
        return { status: 500 };
      }
      return { status: 200 };
    });
    const deadHook = await receiver(() => ({ hang: true }));
    await subscribe(deadHook.url);
    const endpoint = await subscribe(hook.url);

    const product = await api.product({ price: 700 });
    const customer = await api.customer();
    const place = async () => {
      const res = await api.call("POST", "/api/orders", {
        token: customer.token,
        body: { product_id: product.id, qty: 1 },
      });
      return res.json.order_id as number;
    };
    slowOrder = await place();
    const others = [await place(), await place()];
    for (const id of [slowOrder, ...others])
      await api.call("PATCH", `/api/orders/${id}`, {
        token: adminToken,
        body: { status: "paid", note: "paid by bank transfer" },
      });

    await eventually(async () =>
      others.every((id) => hook.forOrder(id).length === 2) ? true : undefined,
    );
    await eventually(async () => (hook.forOrder(slowOrder).length === 3 ? true : undefined));
    // The other orders were through while the slow order's first event waited out its retry.
    const slowPaid = hook.forOrder(slowOrder)[2];
    for (const id of others)
      for (const request of hook.forOrder(id)) expect(request.at).toBeLessThan(slowPaid.at);
    expect(hook.forOrder(slowOrder).map((r) => r.json.type)).toEqual([
      "orders.created",
      "orders.created",
      "orders.paid",
    ]);
    for (const id of others)
      expect(hook.forOrder(id).map((r) => r.json.type)).toEqual(["orders.created", "orders.paid"]);
    for (const request of hook.received)
      expect(verifyDelivery(endpoint.secret, request)).toBeDefined();
  });
});

/** The replica's count of dispatcher wake-ups by `source`, as its /metrics shows it. */
async function wakes(replica: ApiHarness, source: string): Promise<number> {
  const scrape = await replica.call("GET", "/metrics");
  const line = scrape.text
    .split("\n")
    .find((l) => l.startsWith(`webhook_dispatcher_wakes_total{source="${source}"}`));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

describe("wake-up", () => {
  test("H10: deliveries committed by another api wake a replica's dispatcher through the database (NOTIFY at commit), not its poll", async () => {
    // A poll a minute apart: only the NOTIFY can wake this replica during the test.
    const replica = await startApi({ env: webhookEnv, webhookDispatcher: { pollMs: 60_000 } });
    replica.service.dispatcher.start();
    try {
      // The LISTEN is in place once a NOTIFY of its own comes back (postgres.js listens on a
      // connection of its own, asynchronously).
      await eventually(
        async () => {
          await replica.sql`select pg_notify('api_webhooks_due', '')`;
          await Bun.sleep(50);
          return (await wakes(replica, "notify")) > 0 ? true : undefined;
        },
        10_000,
        "the replica listening",
      );
      const before = await wakes(replica, "notify");
      const polls = await wakes(replica, "poll");
      const hook = await receiver();
      const endpoint = await subscribe(hook.url, ["orders.paid"]);
      // Committed by the file's api, not the replica.
      const orderId = await paidOrder();
      await eventually(
        async () => ((await wakes(replica, "notify")) > before ? true : undefined),
        10_000,
        "the replica woken by the commit's NOTIFY",
      );
      await eventually(
        async () => (hook.forOrder(orderId).length === 1 ? true : undefined),
        10_000,
        "orders.paid delivered",
      );
      expect(await wakes(replica, "poll")).toBe(polls);
      // A rolled-back insert of deliveries wakes no one: the NOTIFY goes with the commit only.
      const quiet = await wakes(replica, "notify");
      await api.sql
        .begin(async (tx) => {
          await tx`insert into api.webhook_deliveries (endpoint_id, event_type, message_id, payload)
            values (${endpoint.id}, 'orders.paid', ${unique("rolled-back")}, '{}')`;
          throw new Error("roll back");
        })
        .catch(() => {});
      // A NOTIFY committed after it arrives after anything the rolled-back one could have sent.
      await api.sql`select pg_notify('api_webhooks_due', '')`;
      await eventually(
        async () => ((await wakes(replica, "notify")) > quiet ? true : undefined),
        10_000,
        "the marker NOTIFY",
      );
      expect(await wakes(replica, "notify")).toBe(quiet + 1);
    } finally {
      await replica.close();
    }
  });
});

describe("nothing lost", () => {
  test("H6: two replicas racing for the same deliveries: every event delivered once per endpoint, none twice, none lost", async () => {
    const replica = await startApi({ env: webhookEnv, webhookDispatcher: { pollMs: 20 } });
    replica.service.dispatcher.start();
    try {
      const hooks = [await receiver(), await receiver()];
      const subscribed = [await subscribe(hooks[0].url), await subscribe(hooks[1].url)];
      const ids: number[] = [];
      for (let i = 0; i < 15; i++) ids.push(await paidOrder());
      for (const hook of hooks)
        await eventually(
          async () => (ids.every((id) => hook.forOrder(id).length === 2) ? true : undefined),
          20_000,
          "every event at every endpoint",
        );
      await Bun.sleep(300);
      for (const [i, hook] of hooks.entries()) {
        const ours = hook.received.filter((r) => ids.includes(r.json.data.order_id));
        expect(ours).toHaveLength(30);
        expect(new Set(ours.map((r) => r.id)).size).toBe(30);
        for (const request of ours)
          expect(verifyDelivery(subscribed[i].secret, request)).toBeDefined();
        const rows = await deliveryRows(subscribed[i].id);
        expect(rows.every((row) => row.status === "succeeded" && row.attempts === 1)).toBe(true);
      }
    } finally {
      await replica.close();
    }
  });

  test("H6: an event written twice for one endpoint makes one delivery (unique endpoint and message id)", async () => {
    const hook = await receiver();
    const endpoint = await subscribe(hook.url, ["orders.paid"]);
    const orderId = await paidOrder();
    const { enqueueDeliveries } = await import("./fan-out");
    await enqueueDeliveries(api.db, [
      { type: "orders.paid", messageId: `order-paid-${orderId}`, orderId, payload: {} },
    ]);
    expect(await deliveryRows(endpoint.id)).toHaveLength(1);
  });
});

describe("no request where it must not go", () => {
  test("H7: create and update refuse a non-https url, a literal internal address, localhost and a name resolving to one (400 naming the reason); a name that does not resolve yet is accepted", async () => {
    const strict = await startApi({});
    try {
      const admin = await strict.admin();
      const refused = async (url: string) => {
        const res = hooks.kept(
          await strict.call("POST", "/api/webhook-endpoints", {
            token: admin,
            body: { url, events: ["*"] },
          }),
        );
        expect(res.status).toBe(400);
        return res.json.errors[0].message as string;
      };
      expect(await refused("http://example.com/hook")).toBe("url must be https");
      expect(await refused("https://127.0.0.1/hook")).toBe("url names an internal address");
      expect(await refused("https://10.1.2.3/hook")).toContain("internal address");
      expect(await refused("https://169.254.169.254/latest")).toContain("internal address");
      expect(await refused("https://[::1]/hook")).toContain("internal address");
      expect(await refused("https://[fd00::1]/hook")).toContain("internal address");
      expect(await refused("https://[::ffff:192.168.0.1]/hook")).toContain("internal address");
      expect(await refused("https://localhost/hook")).toBe("url names localhost");
      // The machine's own name resolves to a loopback address (from /etc/hosts, as DNS would).
      const [own] = await lookup(hostname(), { all: true });
      if (own && isInternalAddress(own.address))
        expect(await refused(`https://${hostname()}/hook`)).toContain(
          "url resolves to an internal address",
        );
      expect(await refused("https://user:pw@example.com/hook")).toContain("credentials");
      expect(await refused("ftp://example.com")).toBe("url must be https");

      const later = hooks.kept(
        await strict.call("POST", "/api/webhook-endpoints", {
          token: admin,
          body: { url: `https://${unique("h")}.invalid/hook`, events: ["*"] },
        }),
      );
      expect(later.status).toBe(201);
      const patched = await strict.call("PATCH", `/api/webhook-endpoints/${later.json.id}`, {
        token: admin,
        body: { url: "https://192.168.1.1/hook" },
      });
      expect(patched.status).toBe(400);
      expect(patched.json.errors[0]).toMatchObject({ path: "/url" });
      // No delivery should try the name that does not resolve.
      await strict.sql`update api.webhook_endpoints set status = 'disabled' where id = ${later.json.id}`;
    } finally {
      await strict.close();
    }
  });

  test("H7: at every connection the name is resolved and checked; an internal answer fails the attempt with blocked_address and nothing is sent", async () => {
    const { sendDelivery } = await import("./sender");
    const hook = await receiver();
    const policy = { allowHttp: true, allowPrivate: false };
    const byName = await sendDelivery(`http://localhost:${hook.port}/hook`, {}, "{}", 2000, policy);
    expect(byName.error).toBe("blocked_address");
    const ownName = await sendDelivery(
      `http://${hostname()}:${hook.port}/hook`,
      {},
      "{}",
      2000,
      policy,
    );
    expect(ownName.error).toBe("blocked_address");
    const literal = await sendDelivery(hook.url, {}, "{}", 2000, policy);
    expect(literal.error).toBe("blocked_address");
    const clear = await sendDelivery(hook.url, {}, "{}", 2000, { ...policy, allowHttp: false });
    expect(clear.error).toBe("blocked_protocol");
    expect(hook.received).toHaveLength(0);
    const allowed = await sendDelivery(`http://localhost:${hook.port}/hook`, {}, "{}", 2000, {
      allowHttp: true,
      allowPrivate: true,
    });
    expect(allowed.statusCode).toBe(200);
    expect(hook.received).toHaveLength(1);
  });

  test("H7: an http endpoint saved while WEBHOOK_ALLOW_HTTP=1 fails its attempts with blocked_protocol once it is 0, and nothing is sent", async () => {
    const hook = await receiver();
    const endpoint = await subscribe(hook.url, ["orders.paid"]);
    await api.service.dispatcher.stop();
    const clear = await startApi({
      env: { ...webhookEnv, WEBHOOK_ALLOW_HTTP: "0" },
      webhookDispatcher: { pollMs: 50 },
    });
    try {
      clear.service.dispatcher.start();
      await paidOrder();
      const rows = await eventually(async () => {
        const found = await api.sql<{ error: string | null; status_code: number | null }[]>`
          select a.error, a.status_code from api.webhook_attempts a
          join api.webhook_deliveries d on d.id = a.delivery_id where d.endpoint_id = ${endpoint.id}`;
        return found.length > 0 ? found : undefined;
      });
      expect(rows[0]).toEqual({ error: "blocked_protocol", status_code: null });
      expect(hook.received).toHaveLength(0);
    } finally {
      await clear.close();
      api.service.dispatcher.start();
    }
  });

  test("N18, H7: a url is stored normalized; a tab or line break in it is refused; the 400 never names a resolved address", async () => {
    const created = hooks.kept(
      await api.call("POST", "/api/webhook-endpoints", {
        token: adminToken,
        body: { url: "HTTP://127.0.0.1:9/a/../hook?x=1", events: ["orders.refunded"] },
      }),
    );
    expect(created.status).toBe(201);
    expect(created.json.url).toBe("http://127.0.0.1:9/hook?x=1");
    for (const url of [
      "https://exa\tmple.com/hook",
      "https://example.com/ho\nok",
      "https://example.com/\r",
    ]) {
      const res = hooks.kept(
        await api.call("POST", "/api/webhook-endpoints", {
          token: adminToken,
          body: { url, events: ["orders.refunded"] },
        }),
      );
      expect(res.status).toBe(400);
    }
    const strict = await startApi({});
    try {
      const res = hooks.kept(
        await strict.call("POST", "/api/webhook-endpoints", {
          token: await strict.admin(),
          body: { url: `https://${hostname()}/hook`, events: ["orders.refunded"] },
        }),
      );
      const [own] = await lookup(hostname(), { all: true });
      if (own && isInternalAddress(own.address)) {
        expect(res.status).toBe(400);
        expect(res.text).not.toContain(own.address);
      }
    } finally {
      await strict.close();
    }
  });

  test("H7: secrets are never logged", async () => {
    const hook = await receiver();
    const endpoint = await subscribe(hook.url);
    const rotated = await api.call("POST", `/api/webhook-endpoints/${endpoint.id}/rotate-secret`, {
      token: adminToken,
    });
    const orderId = await paidOrder();
    await eventually(async () => (hook.forOrder(orderId).length === 2 ? true : undefined));
    const log = api.logLines.join("\n");
    expect(log).toContain("webhook attempt");
    for (const secret of [endpoint.secret, rotated.json.secret]) {
      expect(log).not.toContain(secret);
      expect(log).not.toContain(secret.slice(6));
    }
    expect(log).not.toContain(hook.forOrder(orderId)[0].signature);
  });
});

describe("metrics", () => {
  test("H8: /metrics shows attempts by outcome, their duration, and pending deliveries and the oldest one's age per endpoint", async () => {
    const hook = await receiver(() => ({ status: 500 }));
    const endpoint = await subscribe(hook.url, ["orders.paid"]);
    const orderId = await paidOrder();
    await eventually(async () => (hook.forOrder(orderId).length >= 1 ? true : undefined));
    await api.service.webhookMetrics.refresh();
    const text = (await api.call("GET", "/metrics")).text;
    expect(text).toMatch(/webhook_attempts_total\{outcome="retrying"\} \d+/);
    expect(text).toContain("webhook_attempt_duration_seconds_bucket");
    expect(text).toMatch(
      new RegExp(`webhook_deliveries_pending\\{endpoint_id="${endpoint.id}"\\} 1`),
    );
    expect(text).toMatch(
      new RegExp(`webhook_oldest_pending_seconds\\{endpoint_id="${endpoint.id}"\\} [\\d.]+`),
    );
  });
});

import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually, unique } from "@commerce/testing/basics";
import { privateDatabase, privateStackForFile } from "@commerce/testing/private-database";
import { startStack, succeeded } from "@commerce/testing/processes";
import { loopbackWebhooks, webhookEndpoints } from "@commerce/testing/webhook-endpoints";
import { verifyDelivery } from "@commerce/testing/webhook-receiver";

setDefaultTimeout(90_000);

/**
 * The api's operator behaviour (V5, V6, H3, H4, M3, U7) against listening processes: both
 * services, real PostgreSQL and NATS, a real webhook receiver on loopback. A failed attempt is
 * retried after 300 s, so a test sees the schedule stand still while it retries by hand.
 */
const webhookEnv = {
  ...loopbackWebhooks,
  WEBHOOK_RETRY_SCHEDULE: "300",
  WEBHOOK_TIMEOUT_SECONDS: "2",
  LOG_LEVEL: "info",
};

// A database of its own: no other file's endpoints take this file's deliveries.
const { stack } = await privateStackForFile({ env: webhookEnv });

const hooks = webhookEndpoints(
  () => stack.sql,
  (body) => stack.callApi("POST", "/api/webhook-endpoints", stack.admin, body),
);
const receiver = hooks.receiver;
const subscribe = (url: string, description = unique("warehouse"), events = ["*"]) =>
  hooks.subscribe(url, events, description);
// Each test's endpoints and receivers go, so later tests' orders are not delivered to them.
afterEach(() => hooks.clear());

const subOf = (token: string) =>
  JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString()).sub as string;
const call = (method: string, path: string, body?: unknown, token = stack.admin) =>
  stack.callApi(method, path, token, body);

/** Database time: `since` as the api's clock reads it. */
const dbNow = async () => new Date((await stack.sql`select now() as now`)[0].now).toISOString();

const openReviewOf = (orderId: number, reason: string) =>
  eventually(
    async () => {
      const res = await call("GET", "/api/payment-reviews?status=open&per_page=100");
      return res.json.items.find(
        (r: { order_id: number; reason: string }) => r.order_id === orderId && r.reason === reason,
      );
    },
    20_000,
    `an open ${reason} review of order ${orderId}`,
  );

const timelineOf = async (orderId: number) =>
  (await call("GET", `/api/orders/${orderId}/events`)).json.items as {
    type: string;
    source: string;
    actor: string | null;
    detail: Record<string, unknown>;
  }[];

describe("operator accountability (V5)", () => {
  test("V5: an admin's move without a note is 400 and changes nothing; with one, the timeline, the event and the log name the admin", async () => {
    const order = await stack.newOrder(1500);
    const path = `/api/orders/${order.order_id}`;
    const bare = await call("PATCH", path, { status: "cancelled" });
    expect(bare.status).toBe(400);
    expect(bare.json.errors).toEqual([{ path: "/note", message: expect.any(String) }]);
    const tooLong = await call("PATCH", path, { status: "cancelled", note: "x".repeat(1001) });
    expect(tooLong.status).toBe(400);
    expect(await stack.orderStatus(order.order_id)).toBe("created");

    const note = "Customer phoned: ordered twice by mistake";
    const cancelled = await call("PATCH", path, { status: "cancelled", note });
    expect(cancelled.status).toBe(200);
    const admin = subOf(stack.admin);
    expect((await timelineOf(order.order_id)).at(-1)).toMatchObject({
      type: "cancelled",
      source: "manual",
      actor: admin,
      detail: { reason: "admin", note },
    });
    const [event] = await stack.sql`
      select payload from api.outbox where message_id = ${`order-cancelled-${order.order_id}`}`;
    expect(event.payload).toMatchObject({ source: "manual", actor: admin });
    expect(event.payload).not.toHaveProperty("note");
    await eventually(async () =>
      stack.api.output.includes("order moved by an admin") &&
      stack.api.output.includes(`"actor":"${admin}"`)
        ? true
        : undefined,
    );
    expect(stack.api.output).not.toContain(note);
  });

  test("V5: a customer's own cancel needs no note and names no actor", async () => {
    const order = await stack.newOrder();
    const res = await call(
      "PATCH",
      `/api/orders/${order.order_id}`,
      { status: "cancelled" },
      stack.customer,
    );
    expect(res.status).toBe(200);
    expect((await timelineOf(order.order_id)).at(-1)).toMatchObject({
      type: "cancelled",
      source: "api",
      actor: null,
    });
  });

  test("V5: endpoint changes, retries and replays are on the audit log, newest first, with the actor and never the secret", async () => {
    const hook = await receiver();
    const endpoint = await subscribe(hook.url, "audited");
    const target = `webhook-endpoint/${endpoint.id}`;
    const since = await dbNow();
    expect(
      (await call("PATCH", `/api/webhook-endpoints/${endpoint.id}`, { description: "audited 2" }))
        .status,
    ).toBe(200);
    await call("PATCH", `/api/webhook-endpoints/${endpoint.id}`, { status: "disabled" });
    await call("PATCH", `/api/webhook-endpoints/${endpoint.id}`, { status: "enabled" });
    const rotated = await call("POST", `/api/webhook-endpoints/${endpoint.id}/rotate-secret`);
    await call("POST", `/api/webhook-endpoints/${endpoint.id}/test`);
    await call("POST", `/api/webhook-endpoints/${endpoint.id}/replay-missing`, { since });
    await call("POST", `/api/webhook-endpoints/${endpoint.id}/recover`, { since });
    const deleted = await fetch(`${stack.api.url}/api/webhook-endpoints/${endpoint.id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${stack.admin}` },
    });
    expect(deleted.status).toBe(204);

    const page = await call("GET", "/api/audit?per_page=100");
    expect(page.status).toBe(200);
    const mine = page.json.items.filter((e: { target: string }) => e.target === target);
    expect(mine.map((e: { action: string }) => e.action)).toEqual([
      "webhook_endpoint.delete",
      "webhook_endpoint.recover",
      "webhook_endpoint.replay_missing",
      "webhook_endpoint.test",
      "webhook_endpoint.rotate_secret",
      "webhook_endpoint.enable",
      "webhook_endpoint.disable",
      "webhook_endpoint.update",
      "webhook_endpoint.create",
    ]);
    for (const entry of mine) expect(entry.actor).toBe(subOf(stack.admin));
    expect(mine.at(-1).detail).toMatchObject({ url: hook.url, description: "audited" });
    const text = JSON.stringify(page.json);
    expect(text).not.toContain(endpoint.secret);
    expect(text).not.toContain(rotated.json.secret);
    expect(stack.api.output).toContain('"action":"webhook_endpoint.rotate_secret"');
    expect((await call("GET", "/api/audit", undefined, stack.customer)).status).toBe(403);
    expect((await call("GET", "/api/audit?per_page=0")).status).toBe(400);
  });

  test("V5: a note given with an endpoint's disable, enable, replay-missing or recover is kept on its audit entry; a note alone or a bad one is 400 and changes nothing", async () => {
    const hook = await receiver();
    const endpoint = await subscribe(hook.url, "noted");
    const target = `webhook-endpoint/${endpoint.id}`;
    const path = `/api/webhook-endpoints/${endpoint.id}`;
    const since = await dbNow();
    const why = (what: string) => `${what}: warehouse maintenance, ticket ${unique("t")}`;
    const notes = {
      disable: why("disable"),
      enable: why("enable"),
      replay: why("replay"),
      recover: why("recover"),
    };
    expect((await call("PATCH", path, { status: "disabled", note: notes.disable })).status).toBe(
      200,
    );
    expect((await call("PATCH", path, { status: "enabled", note: notes.enable })).status).toBe(200);
    expect(
      (await call("POST", `${path}/replay-missing`, { since, note: notes.replay })).status,
    ).toBe(202);
    expect((await call("POST", `${path}/recover`, { since, note: notes.recover })).status).toBe(
      202,
    );
    // Without a note the entry has none, as before.
    expect((await call("PATCH", path, { description: "noted 2" })).status).toBe(200);

    const before = (await call("GET", "/api/audit?per_page=100")).json.items.filter(
      (e: { target: string }) => e.target === target,
    );
    expect(
      before.map((e: { action: string; detail: { note?: string } }) => [e.action, e.detail.note]),
    ).toEqual([
      ["webhook_endpoint.update", undefined],
      ["webhook_endpoint.recover", notes.recover],
      ["webhook_endpoint.replay_missing", notes.replay],
      ["webhook_endpoint.enable", notes.enable],
      ["webhook_endpoint.disable", notes.disable],
      ["webhook_endpoint.create", undefined],
    ]);

    // A note with no change beside it, an empty note, a control character: 400, nothing moves.
    const alone = await call("PATCH", path, { note: "only a note" });
    expect(alone.status).toBe(400);
    expect(alone.json.errors).toEqual([expect.objectContaining({ path: "/note" })]);
    for (const note of ["", "bell\u0007"])
      expect((await call("PATCH", path, { status: "disabled", note })).status).toBe(400);
    expect((await call("POST", `${path}/recover`, { since, note: "" })).status).toBe(400);
    expect((await call("GET", path)).json.status).toBe("enabled");
    const after = (await call("GET", "/api/audit?per_page=100")).json.items.filter(
      (e: { target: string }) => e.target === target,
    );
    expect(after).toHaveLength(before.length);
  });
});

describe("guard rails (V6)", () => {
  test("V6: marking paid an order with an open mismatch review is 409 naming the review; applying it without accepting the amount is 409 with a stable code", async () => {
    const order = await stack.newOrder(1290);
    expect((await stack.notify(succeeded(order, { amount: 1000 }))).status).toBe(200);
    const review = await openReviewOf(order.order_id, "mismatch");
    const paid = await call("PATCH", `/api/orders/${order.order_id}`, {
      status: "paid",
      note: "looks paid",
    });
    expect(paid.status).toBe(409);
    expect(paid.json).toMatchObject({ code: "open_review" });
    expect(paid.json.detail).toContain(`review ${review.id}`);
    expect(await stack.orderStatus(order.order_id)).toBe("created");
    const apply = await call("POST", `/api/payment-reviews/${review.id}/resolve`, {
      action: "apply",
      note: "customer paid less",
    });
    expect(apply.status).toBe(409);
    expect(apply.json.code).toBe("amount_not_accepted");
    const accepted = await call("POST", `/api/payment-reviews/${review.id}/resolve`, {
      action: "apply",
      note: "customer paid less; we accept it",
      accept_amount: true,
    });
    expect(accepted.status).toBe(200);
    const entries = await timelineOf(order.order_id);
    expect(entries.filter((e) => e.source === "review")).toMatchObject([
      {
        type: "paid",
        actor: subOf(stack.admin),
        detail: { note: "customer paid less; we accept it" },
      },
      { type: "review_resolved", actor: subOf(stack.admin), detail: { resolution: "applied" } },
    ]);
  });

  test("V6: applying a duplicate_payment is 409 saying to dismiss it and refund elsewhere; a manual refund says no money is sent back", async () => {
    const order = await stack.newOrder(800);
    await stack.notify(succeeded(order));
    await stack.paid(order.order_id);
    await stack.notify(succeeded(order));
    const review = await openReviewOf(order.order_id, "duplicate_payment");
    const apply = await call("POST", `/api/payment-reviews/${review.id}/resolve`, {
      action: "apply",
      note: "charged twice",
    });
    expect(apply.status).toBe(409);
    expect(apply.json.code).toBe("move_not_possible");
    expect(apply.json.detail).toMatch(/Dismiss the review.*refund the second payment/s);
    expect((await call("GET", `/api/payment-reviews/${review.id}`)).json.status).toBe("open");

    const refunded = await call("PATCH", `/api/orders/${order.order_id}`, {
      status: "refunded",
      note: "refunded in the provider's dashboard",
    });
    expect(refunded.status).toBe(200);
    expect(refunded.json.status).toBe("refunded");
    expect(refunded.json.notice).toMatch(/sends no money back/);
  });
});

describe("richer order events (M3)", () => {
  test("M3: orders.paid on NATS and in the webhook carries customer_id, items and, for a manual move, the actor", async () => {
    const hook = await receiver();
    const endpoint = await subscribe(hook.url, "m3", ["orders.paid"]);
    const order = await stack.newOrder(1999, 3);
    await call("PATCH", `/api/orders/${order.order_id}`, { status: "paid", note: "bank transfer" });
    const [message] = await stack.publishedOrdersPaid(order.order_id);
    const [{ product_id: productId }] = await stack.sql`
      select product_id from api.order_items where order_id = ${order.order_id}`;
    const expected = {
      order_id: order.order_id,
      status: "paid",
      source: "manual",
      customer_id: subOf(stack.customer),
      items: [{ product_id: productId, name: "Lamp", qty: 3, unit_price: 1999 }],
      actor: subOf(stack.admin),
    };
    expect(message).toMatchObject(expected);
    const [delivery] = await eventually(async () =>
      hook.forOrder(order.order_id).length ? hook.forOrder(order.order_id) : undefined,
    );
    verifyDelivery(endpoint.secret, delivery);
    expect(delivery.json.data).toEqual(message as unknown as Record<string, unknown>);
  });
});

describe("disabling and recovery (H3)", () => {
  test("H3: a disabled endpoint gets no delivery for what happens meanwhile, says so, and replay-missing delivers it in event order, once", async () => {
    const hook = await receiver();
    const endpoint = await subscribe(hook.url);
    const since = await dbNow();
    const disabled = await call("PATCH", `/api/webhook-endpoints/${endpoint.id}`, {
      status: "disabled",
    });
    expect(disabled.json.notice).toMatch(/no delivery is made for an event that happens while/);
    const order = await stack.newOrder(700);
    await call("PATCH", `/api/orders/${order.order_id}`, { status: "paid", note: "cash" });
    await call("PATCH", `/api/webhook-endpoints/${endpoint.id}`, { status: "enabled" });
    const none = await call(
      "GET",
      `/api/webhook-endpoints/${endpoint.id}/deliveries?order_id=${order.order_id}`,
    );
    expect(none.json.total).toBe(0);

    const tooOld = new Date(Date.now() - 31 * 86_400_000).toISOString();
    const refused = await call("POST", `/api/webhook-endpoints/${endpoint.id}/replay-missing`, {
      since: tooOld,
    });
    expect(refused.status).toBe(400);
    expect(refused.json.errors[0].path).toBe("/since");

    const replay = await call("POST", `/api/webhook-endpoints/${endpoint.id}/replay-missing`, {
      since,
    });
    expect(replay.status).toBe(202);
    expect(replay.json.queued).toBeGreaterThanOrEqual(2);
    const arrived = await eventually(async () =>
      hook.forOrder(order.order_id).length === 2 ? hook.forOrder(order.order_id) : undefined,
    );
    expect(arrived.map((r) => r.json.type)).toEqual(["orders.created", "orders.paid"]);
    expect(arrived.map((r) => r.id)).toEqual([
      `order-created-${order.order_id}`,
      `order-paid-${order.order_id}`,
    ]);
    for (const request of arrived) verifyDelivery(endpoint.secret, request);
    const again = await call("POST", `/api/webhook-endpoints/${endpoint.id}/replay-missing`, {
      since,
    });
    expect(again.json).toEqual({ queued: 0 });
    await Bun.sleep(500);
    expect(hook.forOrder(order.order_id)).toHaveLength(2);
  });

  test("H3 (v5): replay-missing queues no event from before the endpoint existed or subscribed to its type; the endpoint says when and by whom it was disabled, the since to replay from", async () => {
    const hook = await receiver();
    const paidAs = async (orderId: number) =>
      expect(
        (await call("PATCH", `/api/orders/${orderId}`, { status: "paid", note: "cash" })).status,
      ).toBe(200);
    // Before the endpoint exists.
    const before = await stack.newOrder(700);
    await paidAs(before.order_id);
    const endpoint = await subscribe(hook.url, unique("warehouse"), ["orders.created"]);
    // Subscribed to orders.created only: this order's orders.paid is not for it.
    const early = await stack.newOrder(700);
    await paidAs(early.order_id);
    await eventually(async () => (hook.forOrder(early.order_id).length === 1 ? true : undefined));
    const path = `/api/webhook-endpoints/${endpoint.id}`;
    expect((await call("PATCH", path, { events: ["orders.created", "orders.paid"] })).status).toBe(
      200,
    );
    const fresh = await call("GET", path);
    expect(fresh.json).toMatchObject({ disabled_at: null, disabled_by: null });

    const disabled = await call("PATCH", path, { status: "disabled", note: "warehouse moves" });
    const disabledAt = disabled.json.disabled_at as string;
    expect(Date.parse(disabledAt)).toBeGreaterThan(Date.parse(fresh.json.created_at));
    expect(disabled.json).toMatchObject({
      status: "disabled",
      disabled_reason: "manual",
      disabled_by: subOf(stack.admin),
    });
    // Disabling again keeps the moment it was disabled.
    const twice = await call("PATCH", path, { status: "disabled" });
    expect(twice.json.disabled_at).toBe(disabledAt);
    const missed = await stack.newOrder(700);
    await paidAs(missed.order_id);
    const enabled = await call("PATCH", path, { status: "enabled" });
    // Kept after it is enabled again: it is what replay-missing starts from.
    expect(enabled.json).toMatchObject({
      status: "enabled",
      disabled_reason: null,
      disabled_at: disabledAt,
      disabled_by: subOf(stack.admin),
    });

    // `since` an hour back reaches no further than the endpoint and its subscriptions do.
    const replay = await call("POST", `${path}/replay-missing`, {
      since: new Date(Date.now() - 3_600_000).toISOString(),
    });
    expect(replay.status).toBe(202);
    const deliveries = await stack.sql<{ message_id: string }[]>`
      select message_id from api.webhook_deliveries where endpoint_id = ${endpoint.id}
        and order_id in ${stack.sql([before.order_id, early.order_id, missed.order_id])}
      order by id`;
    expect(deliveries.map((d) => d.message_id)).toEqual([
      `order-created-${early.order_id}`,
      `order-created-${missed.order_id}`,
      `order-paid-${missed.order_id}`,
    ]);
    const again = await call("POST", `${path}/replay-missing`, { since: disabledAt });
    expect(again.json).toEqual({ queued: 0 });
  });

  test("H3: recover attempts every failed delivery again with the same webhook-id; a second call queues 0", async () => {
    // Its own api and database, whose schedule fails a delivery after one retry a second later.
    const own = await privateDatabase();
    const quick = await startStack({
      start: ["api"],
      databaseUrl: own.url,
      env: { ...webhookEnv, WEBHOOK_RETRY_SCHEDULE: "1" },
    });
    try {
      let up = false;
      const hook = await receiver(() => ({ status: up ? 200 : 500 }));
      const res = await quick.callApi("POST", "/api/webhook-endpoints", quick.admin, {
        url: hook.url,
        events: ["orders.created"],
      });
      const since = await dbNow();
      const product = await quick.callApi("POST", "/api/products", quick.admin, {
        name: "Lamp",
        price: 300,
        category: unique("c"),
      });
      const order = await quick.callApi("POST", "/api/orders", quick.customer, {
        product_id: product.json.id,
        qty: 1,
      });
      const deliveries = `/api/webhook-endpoints/${res.json.id}/deliveries`;
      await eventually(
        async () => {
          const page = await quick.callApi("GET", `${deliveries}?status=failed`, quick.admin);
          return page.json.total === 1 ? true : undefined;
        },
        20_000,
        "the delivery failed",
      );
      expect(hook.received).toHaveLength(2);
      up = true;
      const recover = `/api/webhook-endpoints/${res.json.id}/recover`;
      const recovered = await quick.callApi("POST", recover, quick.admin, { since });
      expect(recovered).toMatchObject({ status: 202, json: { queued: 1 } });
      expect((await quick.callApi("POST", recover, quick.admin, { since })).json).toEqual({
        queued: 0,
      });
      await eventually(async () => (hook.received.length === 3 ? true : undefined));
      expect(new Set(hook.received.map((r) => r.id))).toEqual(
        new Set([`order-created-${order.json.order_id}`]),
      );
      // The receiver has its answer before the api records it.
      await eventually(async () => {
        const done = await quick.callApi("GET", `${deliveries}?status=succeeded`, quick.admin);
        return done.json.total === 1 ? true : undefined;
      });
    } finally {
      await quick.stop();
      await own.drop();
    }
  });
});

describe("seeing deliveries (H4, U7)", () => {
  test("H4: a manual retry answers its outcome, is on the log, and leaves the next automatic attempt where it was", async () => {
    let up = false;
    const hook = await receiver(() => ({ status: up ? 204 : 503, body: "down" }));
    const endpoint = await subscribe(hook.url, "retry", ["orders.created"]);
    const order = await stack.newOrder();
    const listed = await eventually(async () => {
      const page = await call(
        "GET",
        `/api/webhook-endpoints/${endpoint.id}/deliveries?order_id=${order.order_id}`,
      );
      return page.json.items[0]?.last_status_code === 503 ? page.json.items[0] : undefined;
    });
    expect(listed).toMatchObject({ status: "pending", attempts: 1, order_id: order.order_id });
    const retry = `/api/webhook-endpoints/${endpoint.id}/deliveries/${listed.id}/retry`;

    const failed = await call("POST", retry);
    expect(failed.status).toBe(202);
    expect(failed.json).toMatchObject({
      status: "pending",
      attempts: 2,
      next_attempt_at: listed.next_attempt_at,
      last_status_code: 503,
      attempt: { status_code: 503, outcome: "failed", response_body: "down" },
    });
    const [row] = await stack.sql`
      select attempts, manual_attempts from api.webhook_deliveries where id = ${listed.id}`;
    expect(row).toEqual({ attempts: 1, manual_attempts: 1 });

    up = true;
    const succeeded = await call("POST", retry);
    expect(succeeded.json).toMatchObject({
      status: "succeeded",
      next_attempt_at: null,
      attempt: { status_code: 204, outcome: "succeeded" },
    });
    const read = await call("GET", `/api/webhook-endpoints/${endpoint.id}/deliveries/${listed.id}`);
    expect(read.json.attempts_log.map((a: { status_code: number }) => a.status_code)).toEqual([
      503, 503, 204,
    ]);
    expect(hook.received).toHaveLength(3);

    await call("PATCH", `/api/webhook-endpoints/${endpoint.id}`, { status: "disabled" });
    const refused = await call("POST", retry);
    expect(refused.status).toBe(409);
    expect(refused.json.code).toBe("endpoint_disabled");
  });

  test("U7: an order's deliveries to every endpoint, oldest first, with each endpoint's description; the health line counts failing and disabled endpoints", async () => {
    const good = await receiver();
    const bad = await receiver(() => ({ status: 500 }));
    const warehouse = await subscribe(good.url, "warehouse");
    const mail = await subscribe(bad.url, "e-mail", ["orders.created"]);
    const order = await stack.newOrder();
    await call("PATCH", `/api/orders/${order.order_id}`, { status: "paid", note: "cash" });
    const path = `/api/orders/${order.order_id}/deliveries`;
    const listed = await eventually(async () => {
      const res = await call("GET", path);
      return res.json.items.length === 3 &&
        res.json.items.every((d: { attempts: number }) => d.attempts > 0)
        ? res.json.items
        : undefined;
    });
    expect(listed).toMatchObject([
      {
        endpoint_id: warehouse.id,
        endpoint_description: "warehouse",
        event_type: "orders.created",
        status: "succeeded",
      },
      {
        endpoint_id: mail.id,
        endpoint_description: "e-mail",
        endpoint_url: bad.url,
        event_type: "orders.created",
        status: "pending",
        last_status_code: 500,
      },
      {
        endpoint_id: warehouse.id,
        event_type: "orders.paid",
        status: "succeeded",
        message_id: `order-paid-${order.order_id}`,
      },
    ]);
    expect((await call("GET", path, undefined, stack.customer)).status).toBe(403);
    expect((await call("GET", "/api/orders/9007199254740991/deliveries")).status).toBe(404);

    // The figures are 5-second readings: wait for one taken after the failure.
    const status = await eventually(
      async () => {
        const res = await call("GET", "/api/status");
        return res.json.failing_endpoints >= 1 ? res.json : undefined;
      },
      20_000,
      "a failing endpoint on the health line",
    );
    expect(status.oldest_pending_delivery_seconds).toBeGreaterThanOrEqual(0);
    // The endpoint list shows which endpoint fails now, by the rule the health line counts by.
    expect((await call("GET", `/api/webhook-endpoints/${mail.id}`)).json).toMatchObject({
      failing_since: expect.any(String),
      failing_now: true,
    });
    expect((await call("GET", `/api/webhook-endpoints/${warehouse.id}`)).json).toMatchObject({
      failing_since: null,
      failing_now: false,
    });
    await call("PATCH", `/api/webhook-endpoints/${mail.id}`, { status: "disabled" });
    const [{ disabled }] = await stack.sql`
      select count(*)::int as disabled from api.webhook_endpoints where status = 'disabled'`;
    await eventually(
      async () => {
        const res = await call("GET", "/api/status");
        return res.json.disabled_endpoints === disabled ? true : undefined;
      },
      20_000,
      "the disabled endpoint on the health line",
    );
  });
});

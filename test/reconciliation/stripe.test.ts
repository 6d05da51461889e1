import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually } from "@commerce/testing/basics";
import { stripeRequest } from "@commerce/testing/provider-requests";
import { refundStackForFile } from "@commerce/testing/refund-stack";

setDefaultTimeout(60_000);

// Both services in this process with the local Stripe API; payments reconciles with it every
// second (RECONCILE_INTERVAL_SECONDS=1), each call bounded by 500 ms. A refund without a definite
// answer is asked again only after a minute, so what confirms it here is the sweep; Stripe's
// circuit opens after two refund calls without one, for 3 s.
const stack = await refundStackForFile({
  env: { RECONCILE_INTERVAL_SECONDS: "1" },
  refunds: {
    callTimeoutMs: 500,
    retryBaseMs: 60_000,
    retryMaxMs: 60_000,
    circuitThreshold: 2,
    circuitCoolDownMs: 3_000,
  },
});
const { stripeApi, sql } = stack;
const scope = stack.topology.payments.stream;

type Run = {
  id: number;
  kind: string;
  /** Times as unix milliseconds. */
  window_from: number;
  window_to: number;
  started_at: number;
  finished_at: number | null;
  checked: number;
  found: number;
  applied: number;
  errors: number;
};

const runs = (kind: string) =>
  sql<Run[]>`
    select id::int, kind, extract(epoch from window_from)::float8 * 1000 as window_from,
      extract(epoch from window_to)::float8 * 1000 as window_to,
      extract(epoch from started_at)::float8 * 1000 as started_at,
      extract(epoch from finished_at)::float8 * 1000 as finished_at, checked, found, applied, errors
    from payments.reconciliation_runs
    where scope = ${scope} and provider = 'stripe' and kind = ${kind} order by id`;

/** The first finished run of `kind` that started after `since` and matches `match`. */
const runAfter = (kind: string, since: number, match: (run: Run) => boolean = () => true) =>
  eventually(
    async () =>
      (await runs(kind)).find((run) => run.started_at > since && run.finished_at && match(run)),
    20_000,
    `a ${kind} run`,
  );

const stored = (key: string) =>
  sql<{ source: string; event: string; order_id: string | null; ignored: string | null }[]>`
    select source, event, order_id, ignored from payments.notifications where key = ${key}`;

/** How often the api applied a payment of this order (M2: once, whatever arrived). */
const appliedPayments = async (orderId: number) =>
  (
    await sql<{ n: number }[]>`
      select count(*)::int as n from api.processed_notifications
      where order_id = ${orderId} and outcome = 'paid'`
  )[0].n;

const metric = async (pattern: RegExp) => {
  const text = await (await fetch(`${stack.paymentsUrl}/metrics`)).text();
  return text.match(pattern)?.slice(1).map(Number)[0];
};

const figures: Record<string, number> = {};
afterAll(() => {
  // B5: the figures the closing note gives (time from a missed payment to paid).
  console.log("reconciliation figures", JSON.stringify(figures));
  const cut = stack.paymentsLog.filter((line) =>
    /cut short|"found":[1-9]|skipped_items|run failed/.test(line),
  );
  if (process.env.SHOW_RUN_FAILURES) console.log(cut.join("\n"));
});

describe("B1: Stripe's events", () => {
  test("B1, W5: an event Stripe never sent as a webhook is stored and pays its order within one run; the late webhook is then a duplicate, applied once", async () => {
    const orderId = await stack.placeOrder(2100);
    const missedAt = Date.now();
    const { event } = await stripeApi.pay(orderId, 2100, "unsent");
    if (!event) throw new Error("no event");
    await stack.paidBecomes(orderId);
    figures.unsent_event_to_paid_ms = Date.now() - missedAt;
    const [row] = await stored(`stripe:${event.id}`);
    expect(row).toMatchObject({ source: "reconciliation", event: "payment_intent.succeeded" });
    expect(row.order_id).toBe(String(orderId));
    const run = await runAfter("events", missedAt - 1000, (r) => r.applied > 0);
    expect(run.errors).toBe(0);
    expect(run.found).toBeGreaterThanOrEqual(1);

    // Stripe retries the webhook later: the same id, so a duplicate (W5, G3).
    const { delivery_success: _, ...body } = event;
    const late = await fetch(`${stack.paymentsUrl}/api/webhooks/stripe`, {
      method: "POST",
      ...(await (async () => {
        const request = await stripeRequest(body);
        return { headers: request.headers, body: await request.text() };
      })()),
    });
    expect(late.status).toBe(200);
    expect(await late.json()).toEqual({ received: true, duplicate: true });
    await Bun.sleep(300);
    expect(await appliedPayments(orderId)).toBe(1);
    // T1: the timeline says the money came by reconciliation.
    const timeline = (await stack.call("GET", `/api/orders/${orderId}/events`)).json.items as {
      type: string;
      source: string;
    }[];
    expect(timeline.find((entry) => entry.type === "paid")?.source).toBe("reconciliation");
    expect(
      await metric(/^reconciliation_found_total\{provider="stripe",kind="events"\} (\d+)/m),
    ).toBeGreaterThanOrEqual(1);
  });

  test("B1: while the webhook endpoint is down for hours, several payments' webhooks fail; every one is paid by the next run, once", async () => {
    stripeApi.webhookUrl = "http://127.0.0.1:9/api/webhooks/stripe";
    try {
      const orders = await Promise.all([1100, 1200, 1300, 1400].map((a) => stack.placeOrder(a)));
      const missedAt = Date.now();
      await Promise.all(
        orders.map((orderId, i) =>
          stripeApi.pay(orderId, 1100 + 100 * i, "sent").catch(() => undefined),
        ),
      );
      const pending = stripeApi
        .events()
        .filter((e) =>
          orders.includes(
            Number((e.data.object as { metadata: { order_id: string } }).metadata.order_id),
          ),
        );
      expect(pending.map((e) => e.delivery_success)).toEqual([false, false, false, false]);
      for (const orderId of orders) await stack.paidBecomes(orderId);
      figures.endpoint_down_to_all_paid_ms = Date.now() - missedAt;
      for (const orderId of orders) expect(await appliedPayments(orderId)).toBe(1);
    } finally {
      stripeApi.webhookUrl = `${stack.paymentsUrl}/api/webhooks/stripe`;
    }
  });
});

describe("B1: the objects sweep", () => {
  test("B1: a payment whose event Stripe never created is found by the objects sweep and pays its order (stripe:reconcile:<id>:succeeded)", async () => {
    const orderId = await stack.placeOrder(2300);
    const missedAt = Date.now();
    const { intent } = await stripeApi.pay(orderId, 2300, "none");
    await stack.paidBecomes(orderId);
    figures.never_created_event_to_paid_ms = Date.now() - missedAt;
    const [row] = await stored(`stripe:reconcile:${intent.id}:succeeded`);
    expect(row).toMatchObject({ source: "reconciliation", event: "payment_intent.succeeded" });
    expect(row.order_id).toBe(String(orderId));
    const run = await runAfter("objects", missedAt - 1000, (r) => r.applied > 0);
    expect(run.errors).toBe(0);
    expect(await appliedPayments(orderId)).toBe(1);
    expect(
      await metric(/^reconciliation_found_total\{provider="stripe",kind="objects"\} (\d+)/m),
    ).toBeGreaterThanOrEqual(1);
  });

  test("B1, L4: a refund made in Stripe's dashboard, its event never created, refunds the order as its webhook would", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(2400);
    const refund = await stripeApi.refundElsewhere(paymentRef, 2400, "none");
    await eventually(
      async () => ((await stack.statusOf(orderId)) === "refunded" ? true : undefined),
      15_000,
      `order ${orderId} refunded`,
    );
    const [row] = await stored(`stripe:reconcile:${refund.id}:succeeded`);
    expect(row).toMatchObject({ source: "reconciliation", event: "refund.succeeded" });
  });

  test("B1, F3, F4: a refund the shop asked for whose answer was lost and whose events never came is confirmed succeeded by the sweep, never made twice", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(2500);
    // Stripe makes the refund, but its answer is held past the 500 ms call timeout.
    stripeApi.fail({ kind: "timeout", ms: 2_000, made: true });
    const asked = await stack.call("POST", `/api/orders/${orderId}/refunds`, {
      body: { note: "answer lost" },
    });
    expect(asked.status).toBe(202);
    const refundId = asked.json.refund_id as number;
    const refund = await stack.refundBecomes(orderId, refundId, "succeeded", 20_000);
    expect(refund.provider_refund_id).toBe(stripeApi.refunds(paymentRef)[0].id);
    expect(stripeApi.refunds(paymentRef)).toHaveLength(1);
    // Only the one call that lost its answer: the confirmation came from the sweep.
    expect(
      stripeApi.refundRequests().filter((r) => r.idempotencyKey === `refund-${refundId}`),
    ).toHaveLength(1);
    const [ledger] = await sql<{ status: string }[]>`
      select status from payments.refunds where refund_id = ${refundId}`;
    expect(ledger.status).toBe("succeeded");
    await eventually(
      async () => ((await stack.statusOf(orderId)) === "refunded" ? true : undefined),
      15_000,
      `order ${orderId} refunded`,
    );
    const reviews = await sql<{ reason: string }[]>`
      select reason from api.payment_reviews where order_id = ${orderId}`;
    expect([...reviews]).toEqual([]);
  });

  test("B1, L5: a dispute whose event was never created is told as charge.dispute.created would (stripe:reconcile:<id>:opened)", async () => {
    const { orderId, paymentRef } = await stack.paidThroughStripe(2600);
    const dispute = await stripeApi.dispute(paymentRef, "none");
    const key = `stripe:reconcile:${dispute.id}:opened`;
    await eventually(
      async () => {
        const [row] = await sql<{ outcome: string }[]>`
          select outcome from api.processed_notifications where notification_id = ${key}`;
        return row;
      },
      15_000,
      "the dispute applied",
    );
    const [row] = await stored(key);
    expect(row).toMatchObject({ source: "reconciliation", event: "dispute.opened" });
    const timeline = (await stack.call("GET", `/api/orders/${orderId}/events`)).json.items as {
      type: string;
    }[];
    expect(timeline.map((entry) => entry.type)).toContain("dispute_opened");
  });
});

describe("B1, G4: what is not the shop's, or not readable", () => {
  test("B1, G4: another account's event, the other mode's payment, malformed items and a page longer than asked are skipped and counted; no move, no error", async () => {
    const [otherMode, otherAccount, ours] = await Promise.all(
      [2700, 2800, 2900].map((a) => stack.placeOrder(a)),
    );
    const skippedBefore = async (reason: string) =>
      (await metric(
        new RegExp(
          `^reconciliation_skipped_total\\{provider="stripe",reason="${reason}"\\} (\\d+)`,
          "m",
        ),
      )) ?? 0;
    const before = {
      other_mode: await skippedBefore("other_mode"),
      other_account: await skippedBefore("other_account"),
      malformed: await skippedBefore("malformed"),
      page_too_large: await skippedBefore("page_too_large"),
    };
    const since = Date.now();
    await stripeApi.pay(otherMode, 2700, "unsent", { livemode: true });
    await stripeApi.pay(otherAccount, 2800, "unsent", { account: "acct_1OtherShop000000" });
    // Bad input at the head of the next events page: not objects, no id, a wrong amount, and
    // more items than the page may hold (the real ones follow on the next page).
    stripeApi.inject(
      "/v1/events",
      "not an event",
      { id: 7, type: "payment_intent.succeeded" },
      {
        id: "evt_malformed_amount",
        object: "event",
        type: "payment_intent.succeeded",
        livemode: false,
        data: {
          object: {
            object: "payment_intent",
            id: "pi_x",
            metadata: { order_id: String(ours) },
            amount_received: "lots",
            currency: "usd",
          },
        },
      },
      ...Array.from({ length: 110 }, (_, i) => ({
        id: `evt_other_mode_${i}`,
        object: "event",
        type: "payment_intent.succeeded",
        livemode: true,
        data: { object: { object: "payment_intent", id: `pi_other_${i}` } },
      })),
    );
    stripeApi.inject("/v1/payment_intents", { object: "payment_intent" }, null);
    stripeApi.ignoreLimit = true;
    try {
      await stripeApi.pay(ours, 2900, "unsent");
      await stack.paidBecomes(ours);
      await runAfter("events", since, (r) => r.checked >= 100);
      await runAfter("objects", since);
      // The page cut short goes on after its last kept item: the rest is read in the same run.
      await eventually(
        async () =>
          (await skippedBefore("other_account")) > before.other_account ? true : undefined,
        10_000,
        "the other account's event skipped",
      );
    } finally {
      stripeApi.ignoreLimit = false;
    }
    const after = {
      other_mode: await skippedBefore("other_mode"),
      other_account: await skippedBefore("other_account"),
      malformed: await skippedBefore("malformed"),
      page_too_large: await skippedBefore("page_too_large"),
    };
    expect(after.other_mode - before.other_mode).toBeGreaterThanOrEqual(98);
    expect(after.other_account - before.other_account).toBeGreaterThanOrEqual(1);
    expect(after.malformed - before.malformed).toBeGreaterThanOrEqual(4);
    expect(after.page_too_large - before.page_too_large).toBeGreaterThanOrEqual(1);
    // Never a move for someone else's payment, and no run failed for bad input.
    expect(await stack.statusOf(otherMode)).toBe("created");
    expect(await stack.statusOf(otherAccount)).toBe("created");
    const failed = (await runs("events")).filter((r) => r.started_at > since && r.errors > 0);
    expect(failed).toEqual([]);
    const keys = await sql<{ key: string }[]>`
      select key from payments.notifications where key like 'stripe:evt_other_mode_%'
        or key = 'stripe:evt_malformed_amount' or order_id in (${otherMode}, ${otherAccount})`;
    expect([...keys]).toEqual([]);
    expect(stack.paymentsLog.some((line) => line.includes('"skipped_items"'))).toBe(true);
  });
});

describe("B4: the provider's API down, then back", () => {
  test("B4: while Stripe's API answers 503 and then hangs, runs fail with errors and the checkpoint stays; a webhook is accepted meanwhile; the next good run covers the whole gap", async () => {
    const [before] = await sql<{ at: number }[]>`
      select extract(epoch from checked_until)::float8 * 1000 as at
      from payments.reconciliation_checkpoints where scope = ${scope} and kind = 'stripe:events'`;
    const downAt = Date.now();
    stripeApi.down({ kind: "status", status: 503 });
    try {
      await outage(before.at, downAt);
    } finally {
      stripeApi.up();
    }
  });
});

/** B4's outage, while the API is down: returns after the API is back and the gap is covered. */
async function outage(checkpointBefore: number, downAt: number) {
  {
    const failed = await runAfter("events", downAt, (r) => r.errors > 0);
    expect(failed.applied).toBe(0);
    // Nothing else waits: a webhook is accepted and pays its order at once.
    const viaWebhook = await stack.placeOrder(3000);
    const { event } = await stripeApi.pay(viaWebhook, 3000, "sent");
    expect(event?.delivery_success).toBe(true);
    await stack.paidBecomes(viaWebhook);
    const missed = await Promise.all([3100, 3200].map((a) => stack.placeOrder(a)));
    const missedAt = Date.now();
    for (const [i, orderId] of missed.entries())
      await stripeApi.pay(orderId, 3100 + 100 * i, "unsent");
    // Then the API hangs past the call timeout (500 ms).
    const hangAt = Date.now();
    stripeApi.down({ kind: "timeout", ms: 2_000 });
    await runAfter("events", hangAt, (r) => r.errors > 0);
    const [during] = await sql<{ at: number }[]>`
      select extract(epoch from checked_until)::float8 * 1000 as at
      from payments.reconciliation_checkpoints where scope = ${scope} and kind = 'stripe:events'`;
    expect(during.at).toBeLessThanOrEqual(downAt);
    expect(during.at).toBeGreaterThanOrEqual(checkpointBefore);
    for (const orderId of missed) expect(await stack.statusOf(orderId)).toBe("created");
    const upAt = Date.now();
    stripeApi.up();
    for (const orderId of missed) await stack.paidBecomes(orderId);
    figures.api_down_then_back_to_paid_ms = Date.now() - upAt;
    figures.api_outage_missed_to_paid_ms = Date.now() - missedAt;
    const good = await runAfter("events", upAt, (r) => r.errors === 0);
    // The good run's window starts at the last complete run's end, less the 10-minute overlap.
    expect(good.window_from).toBeLessThanOrEqual(during.at - 10 * 60_000 + 1);
    expect(good.window_from).toBeGreaterThanOrEqual(during.at - 10 * 60_000 - 1);
    for (const orderId of missed) expect(await appliedPayments(orderId)).toBe(1);
    // The errors are logged, never the API key (section 19).
    expect(stack.paymentsLog.some((line) => line.includes("reconciliation run cut short"))).toBe(
      true,
    );
    expect(stack.paymentsLog.join("\n")).not.toContain(stripeApi.apiKey);
    expect(
      await metric(
        /^reconciliation_runs_total\{provider="stripe",kind="events",outcome="failed"\} (\d+)/m,
      ),
    ).toBeGreaterThanOrEqual(2);
  }
}

describe("B1: one run at a time across replicas", () => {
  test("B1: with two payments replicas, runs of one kind never overlap (one checkpoint row held locked), and none is lost", async () => {
    const replica = await stack.paymentsReplica();
    const since = Date.now();
    try {
      const orderId = await stack.placeOrder(3300);
      await stripeApi.pay(orderId, 3300, "unsent");
      await stack.paidBecomes(orderId);
      await Bun.sleep(4_000);
    } finally {
      await replica.stop();
    }
    for (const kind of ["events", "objects"]) {
      const during = (await runs(kind)).filter((r) => r.started_at > since);
      expect(during.length).toBeGreaterThanOrEqual(3);
      for (let i = 1; i < during.length; i++) {
        const previous = during[i - 1];
        expect(previous.finished_at).not.toBeNull();
        expect(during[i].started_at).toBeGreaterThanOrEqual(previous.finished_at as number);
      }
    }
  });
});

describe("B3: the runs, by kind and provider", () => {
  test("B3: GET /api/reconciliation/runs?kind=&provider= lists one kind's runs (per_page=1 is the last); an unknown kind is 400 problem+json", async () => {
    const ask = (query: string) =>
      fetch(`${stack.paymentsUrl}/api/reconciliation/runs${query}`, {
        headers: { authorization: `Bearer ${stack.admin}` },
      });
    for (const kind of ["events", "objects"]) {
      await eventually(async () => ((await runs(kind)).length >= 2 ? true : undefined));
      const response = await ask(`?kind=${kind}&provider=stripe&per_page=1`);
      expect(response.status).toBe(200);
      const body = (await response.json()) as {
        items: { id: number; provider: string; kind: string }[];
        total: number;
      };
      expect(body.items).toHaveLength(1);
      expect(body.items[0]).toMatchObject({ provider: "stripe", kind });
      expect(body.total).toBeGreaterThan(1);
      const [last] = await sql<{ id: number }[]>`
        select id::int from payments.reconciliation_runs
        where scope = ${scope} and kind = ${kind} order by started_at desc, id desc limit 1`;
      expect(body.items[0].id).toBeGreaterThanOrEqual(last.id - 2);
    }
    const inbox = (await (await ask("?kind=inbox&provider=stripe")).json()) as { items: unknown[] };
    expect(inbox.items).toEqual([]);
    const bad = await ask("?kind=everything");
    expect(bad.status).toBe(400);
    expect(bad.headers.get("content-type")).toContain("application/problem+json");
    expect(JSON.stringify(await bad.json())).toContain("/kind");
  });
});

describe("B4: the provider's circuit open", () => {
  test("B4, F7: while Stripe's circuit is open (refund calls failed), runs fail without asking Stripe; after the cool-down they complete", async () => {
    const paid = [await stack.paidThroughStripe(3400), await stack.paidThroughStripe(3500)];
    stripeApi.fail({ kind: "status", status: 503 }, { kind: "status", status: 503 });
    for (const { orderId } of paid)
      expect(
        (await stack.call("POST", `/api/orders/${orderId}/refunds`, { body: { note: "circuit" } }))
          .status,
      ).toBe(202);
    await eventually(
      async () =>
        stack.paymentsLog.some((line) => line.includes("the stripe API circuit is open"))
          ? true
          : undefined,
      15_000,
      "a run refused by the open circuit",
    );
    const openAt = Date.now();
    const failed = (await runs("events")).filter((r) => r.errors > 0).at(-1) as Run;
    expect(failed.checked).toBe(0);
    // After the cool-down (3 s) runs ask Stripe again and complete, though the circuit waits for
    // a refund call to close it.
    await runAfter("events", openAt + 3_000, (r) => r.errors === 0);
  });
});

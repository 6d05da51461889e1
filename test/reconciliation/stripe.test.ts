import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually } from "@commerce/testing/basics";
import { stripeRequest } from "@commerce/testing/provider-requests";
import { refundStackForFile } from "@commerce/testing/refund-stack";

setDefaultTimeout(60_000);

// Both services in this process with the local Stripe API; payments reconciles with it every
// second (RECONCILE_INTERVAL_SECONDS=1), each call bounded by 500 ms. A refund without a definite
// answer is asked again only after a minute, so what confirms it here is the sweep.
const stack = await refundStackForFile({
  env: { RECONCILE_INTERVAL_SECONDS: "1" },
  refunds: { callTimeoutMs: 500, retryBaseMs: 60_000, retryMaxMs: 60_000 },
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
  const cut = stack.paymentsLog.filter((line) => line.includes("cut short"));
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

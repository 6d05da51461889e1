import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually } from "@commerce/testing/basics";
import { startStack } from "@commerce/testing/processes";
import { providersEnv } from "@commerce/testing/provider-requests";
import { startStripeApi } from "@commerce/testing/providers/stripe-api";

setDefaultTimeout(120_000);

// Both services as processes; payments reconciles with the local Stripe API every second, whose
// pages hold two items at most, so a run over three events reads two pages.
const stripeApi = await startStripeApi();
stripeApi.maxPage = 2;
const stack = await startStack({
  env: {
    ...providersEnv,
    STRIPE_API_KEY: stripeApi.apiKey,
    STRIPE_API_URL: stripeApi.url,
    RECONCILE_INTERVAL_SECONDS: "1",
  },
});
afterAll(async () => {
  await stack.stop();
  await stripeApi.stop();
});

type Run = { id: number; window_from: number; finished_at: number | null; errors: number };

const eventRuns = (scope: string) =>
  stack.sql<Run[]>`
    select id::int, extract(epoch from window_from)::float8 * 1000 as window_from,
      extract(epoch from finished_at)::float8 * 1000 as finished_at, errors
    from payments.reconciliation_runs
    where scope = ${scope} and provider = 'stripe' and kind = 'events' order by id`;

describe("a reconciliation run killed halfway", () => {
  test("B1: payments is SIGKILLed between a run's two pages; the next run resumes from the same checkpoint, stores the rest, and nothing is done twice", async () => {
    const scope = stack.topology.payments.stream;
    const orders = [];
    for (const amount of [1500, 1600, 1700]) orders.push(await stack.newOrder(amount));
    // Right after a complete objects run (the events run of the next tick comes first), so the
    // checkpoints are times, not "30 days back", and the events run meets the payments first.
    const since = Date.now();
    await eventually(
      async () => {
        const [row] = await stack.sql`
          select 1 from payments.reconciliation_runs
          where scope = ${scope} and kind = 'objects' and errors = 0
            and finished_at > ${new Date(since).toISOString()}::timestamptz
            and exists (select 1 from payments.reconciliation_runs
              where scope = ${scope} and kind = 'objects' and errors = 0 and finished_at is not null
                and id < (select max(id) from payments.reconciliation_runs where scope = ${scope}))`;
        return row;
      },
      20_000,
      "complete runs",
    );
    // The run's second page hangs (past nothing: payments is killed while it waits).
    stripeApi.failLists({ kind: "timeout", ms: 60_000, laterPage: true, path: "/v1/events" });
    const events = (
      await Promise.all(orders.map((o) => stripeApi.pay(o.order_id, o.amount, "unsent")))
    ).map((paid) => paid.event);
    const keys = events.map((event) => `stripe:${event?.id}`);
    const storedKeys = async () =>
      (
        await stack.sql<{ key: string }[]>`
          select key from payments.notifications where key = any(${keys})`
      ).map((row) => row.key);
    // The first page (the two newest events) is stored; the run waits for the second.
    await eventually(
      async () => ((await storedKeys()).length === 2 ? true : undefined),
      20_000,
      "the first page stored",
    );
    await eventually(
      async () =>
        stripeApi
          .listRequests()
          .some((r) => r.path === "/v1/events" && r.query.includes("starting_after"))
          ? true
          : undefined,
      10_000,
      "the second page asked for",
    );
    await stack.payments.stop("SIGKILL");
    const killed = (await eventRuns(scope)).at(-1) as Run;
    expect(killed.finished_at).toBeNull();
    const [checkpoint] = await stack.sql<{ at: number | null }[]>`
      select extract(epoch from checked_until)::float8 * 1000 as at
      from payments.reconciliation_checkpoints where scope = ${scope} and kind = 'stripe:events'`;

    await stack.payments.start();
    for (const order of orders) await stack.paid(order.order_id, 20_000);
    const resumed = await eventually(
      async () =>
        (await eventRuns(scope)).find(
          (run) => run.id > killed.id && run.finished_at !== null && run.errors === 0,
        ),
      20_000,
      "a complete run after the restart",
    );
    expect((await storedKeys()).sort()).toEqual([...keys].sort());
    // It covered what the killed run had started: the same window start (the checkpoint stayed).
    expect(checkpoint.at).not.toBeNull();
    expect(resumed.window_from).toBe(killed.window_from);
    // Nothing twice: one notification, one message and one payment applied per event.
    for (const [i, order] of orders.entries()) {
      const [{ messages }] = await stack.sql<{ messages: number }[]>`
        select count(*)::int as messages from payments.outbox
        where payload->>'notification_id' = ${keys[i]}`;
      expect(messages).toBe(1);
      const [{ applied }] = await stack.sql<{ applied: number }[]>`
        select count(*)::int as applied from api.processed_notifications
        where order_id = ${order.order_id} and outcome = 'paid'`;
      expect(applied).toBe(1);
    }
    const reconciled = await stack.sql<{ key: string }[]>`
      select key from payments.notifications
      where key like 'stripe:reconcile:%' and order_id = any(${orders.map((o) => o.order_id)})`;
    expect([...reconciled]).toEqual([]);
  });
});

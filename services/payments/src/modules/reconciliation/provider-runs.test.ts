import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { testDatabaseUrl } from "@commerce/testing/basics";
import { paymentsForFile } from "@commerce/testing/in-process";
import { uniqueOrderId } from "@commerce/testing/payments-requests";
import { type StripeApi, startStripeApi } from "@commerce/testing/providers/stripe-api";
import postgres from "postgres";
import { stripeReconciler } from "../providers/stripe/reconcile";
import { ProviderReconciliation } from "./provider-runs";

/**
 * Issue 38: Stripe's objects run asks, for the PaymentIntents of a page, whether a stored
 * notification of the payment explains each state. Once that was one query per PaymentIntent,
 * each a sequential scan of the window's notifications (216 s for 1,000 PaymentIntents over
 * 100,000 stored). Here the run goes against the local Stripe API and a table of realistic size
 * (this file's rows, removed after), through a connection whose every statement's plan
 * auto_explain sends back as a notice: none may read payments.notifications whole.
 */
const payments = await paymentsForFile();
const tag = `plans-${process.pid}-${Date.now()}`;
/** Notifications of other payments, over the 30 days a first run covers. */
const history = 40_000;
/** PaymentIntents at Stripe each explained by a stored notification (two pages of 100). */
const explainedIntents = 150;

let stripeApi: StripeApi;
/** The notifications the run stores (ids), removed after. */
const found: string[] = [];
const plans: { query: string; plan: string }[] = [];
const explaining = postgres(testDatabaseUrl, {
  max: 4,
  connection: {
    session_preload_libraries: "auto_explain",
    "auto_explain.log_min_duration": "0",
    "auto_explain.log_level": "notice",
    "auto_explain.log_format": "json",
  },
  onnotice: (notice) => {
    const message = String(notice.message ?? "");
    const start = message.indexOf("{");
    if (!message.includes("plan:") || start < 0) return;
    const plan = JSON.parse(message.slice(start)) as { "Query Text": string };
    plans.push({ query: plan["Query Text"], plan: message.slice(start) });
  },
});

beforeAll(async () => {
  stripeApi = await startStripeApi();
  const intents = Array.from({ length: explainedIntents }, () =>
    stripeApi.paymentIntent(1999, "usd", uniqueOrderId()),
  );
  await payments.sql`
    insert into payments.notifications (id, provider, event, order_id, payment_ref, amount,
      currency, raw_body, received_at, source_ip)
    select ${tag} || '-older-' || g, 'stripe', 'payment_intent.succeeded', g, 'pi_' || ${tag} || '_' || g,
      1999, 'USD', repeat('x', 600), now() - make_interval(secs => g * (2592000.0 / ${history})),
      '127.0.0.1'
    from generate_series(1, ${history}::int) as g`;
  await payments.sql`
    insert into payments.notifications (id, provider, event, order_id, payment_ref, amount,
      currency, raw_body, source_ip)
    select ${tag} || '-' || p, 'stripe', 'payment_intent.succeeded', 1, p, 1999, 'USD', '{}',
      '127.0.0.1'
    from unnest(${intents.map((intent) => intent.id)}::text[]) as p`;
  await payments.sql`analyze payments.notifications`;
  // The run's window ends a second before now (Stripe's whole seconds).
  await Bun.sleep(2_000);
}, 120_000);

afterAll(async () => {
  stripeApi?.stop();
  // The payments harness's pool may be closed already (its afterAll came first).
  await explaining`
    delete from payments.notifications
    where id like ${`${tag}-%`} or id = any(${found}::text[])`;
  await explaining.end();
});

describe("Stripe's objects run", () => {
  test("B1: a page of PaymentIntents is explained by index lookups, never a Seq Scan of payments.notifications", async () => {
    const unexplained = stripeApi.paymentIntent(2500, "usd", uniqueOrderId());
    found.push(`reconcile:${unexplained.id}:succeeded`);
    await Bun.sleep(1_100);
    const { topology, logger, metrics } = payments.service.deps;
    const client = stripeReconciler(
      { apiKey: stripeApi.apiKey, url: String(stripeApi.url) },
      5_000,
      "test",
    );
    const reconciliation = new ProviderReconciliation({
      sql: explaining,
      topology,
      logger,
      metrics,
      outboxWritten: () => {},
      clients: [client],
      intervalMs: 0,
    });
    plans.length = 0;
    const run = await reconciliation.runOnce(client, "objects");
    await reconciliation.stop();
    expect(run).toMatchObject({ errors: 0, found: 1 });
    expect(run?.checked).toBeGreaterThanOrEqual(explainedIntents + 1);
    const stored = await payments.sql`
      select 1 from payments.notifications where key = ${`stripe:reconcile:${unexplained.id}:succeeded`}`;
    expect(stored.length).toBe(1);

    const reading = plans.filter(({ query }) => /payments\.notifications/.test(query));
    expect(reading.length).toBeGreaterThan(0);
    const scans = reading.filter(({ plan }) =>
      /"Node Type": "Seq Scan",[^}]*?"Relation Name": "notifications"/s.test(plan),
    );
    expect(scans.map(({ query }) => query)).toEqual([]);
    // One lookup per page, not per PaymentIntent.
    const lookups = reading.filter(({ query }) => query.includes("payment_ref"));
    expect(lookups.length).toBeLessThanOrEqual(Math.ceil((explainedIntents + 1) / 100) + 1);
  }, 60_000);
});

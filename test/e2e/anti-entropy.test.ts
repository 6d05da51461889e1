import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { ownStreamOf } from "@commerce/shared/contract/messages";
import { createLogger } from "@commerce/shared/platform/logger";
import { Metrics } from "@commerce/shared/platform/metrics";
import { ensureStream, NatsLink } from "@commerce/shared/platform/nats";
import { eventually, testNatsUrl, token, unique } from "@commerce/testing/basics";
import { startApi, startPayments } from "@commerce/testing/in-process";
import { type Stack, startStack, succeeded } from "@commerce/testing/processes";
import { AppliedAnswerer } from "../../services/api/src/modules/payment-inbox/applied-answer";
import { ensurePaymentConsumer } from "../../services/api/src/modules/payment-inbox/subscription";
import { AntiEntropy } from "../../services/payments/src/modules/reconciliation/anti-entropy";

setDefaultTimeout(90_000);

const quiet = createLogger("error", {}, () => {});

describe("anti-entropy between payments and the api (processes)", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      // A short grace and interval, so the test takes seconds; the defaults are 30 s and 10 s.
      serviceEnv: {
        payments: { ANTI_ENTROPY_INTERVAL_SECONDS: "1", ANTI_ENTROPY_GRACE_SECONDS: "2" },
      },
    });
  });
  afterAll(() => stack.stop());

  const paidEntries = async (orderId: number) =>
    (
      await stack.sql`
        select count(*)::int as n from api.order_events where order_id = ${orderId} and type = 'paid'`
    )[0].n as number;

  test("B2: a payment message deleted from the stream after JetStream acked it is found and re-published within 60 s and pays its order once", async () => {
    const order = await stack.newOrder();
    // The api is away, so the message waits in the stream; then the stream loses it.
    await stack.api.stop();
    const notification = succeeded(order);
    expect((await stack.notify(notification)).status).toBe(200);
    const [published] = await eventually(
      async () => {
        const rows = await stack.sql<{ published_at: Date }[]>`
          select published_at from payments.outbox
          where message_id = ${notification.id} and published_at is not null`;
        return rows.length ? rows : undefined;
      },
      15_000,
      "the notification's message acked by JetStream",
    );
    const stream = stack.topology.payments.stream;
    const stored = await stack.storedMessages(stream);
    const lost = stored.find((message) => message.header?.get("Nats-Msg-Id") === notification.id);
    expect(lost).toBeDefined();
    const jsm = await stack.nats.manager();
    expect(await jsm.streams.deleteMessage(stream, lost?.seq as number)).toBe(true);
    await stack.api.start();

    await stack.paid(order.order_id, 60_000);
    const repairedInMs = Date.now() - published.published_at.getTime();
    console.log(
      `B2: published → lost → paid again in ${repairedInMs} ms (grace 2 s, interval 1 s)`,
    );
    expect(repairedInMs).toBeLessThan(60_000);

    // Applied once: one processed row, one paid timeline entry, one orders.paid.
    const [processed] = await stack.sql`
      select outcome from api.processed_notifications where notification_id = ${notification.id}`;
    expect(["paid", "succeeded"]).toContain(processed.outcome);
    expect(await paidEntries(order.order_id)).toBe(1);
    expect(await stack.publishedOrdersPaid(order.order_id)).toHaveLength(1);

    // Published again as a copy under a message id of its own.
    const copies = await stack.sql`
      select message_id, payload from payments.outbox
      where payload->>'notification_id' = ${notification.id} order by id`;
    expect(copies).toHaveLength(2);
    expect(copies[1].message_id).toStartWith(`${notification.id}:resend:`);
    expect(copies[1].payload).toEqual(copies[0].payload);

    // Counted, listed and logged with the id.
    const metrics = await (await fetch(`${stack.payments.url}/metrics`)).text();
    expect(metrics).toMatch(/^money_path_gaps_found_total [1-9]/m);
    const runs = await fetch(`${stack.payments.url}/api/reconciliation/runs`, {
      headers: { authorization: `Bearer ${stack.admin}` },
    });
    expect(runs.status).toBe(200);
    const { items } = (await runs.json()) as { items: any[] };
    const repair = items.find((run) => run.kind === "inbox" && run.applied > 0);
    expect(repair).toMatchObject({ provider: null, found: 1, applied: 1, errors: 0 });
    expect(repair.finished_at).not.toBeNull();
    expect(Date.parse(repair.window_to)).toBeGreaterThanOrEqual(published.published_at.getTime());
    const line = stack.payments
      .logLines()
      .find((entry) => entry.msg === "money path gaps found: published again");
    expect(line?.notification_ids).toEqual([notification.id]);
    expect(line?.run_id).toBe(repair.id);

    // Later runs find nothing more: the notification is applied.
    await Bun.sleep(3_000);
    expect(await paidEntries(order.order_id)).toBe(1);
    const after = await stack.sql`
      select count(*)::int as n from payments.outbox
      where payload->>'notification_id' = ${notification.id}`;
    expect(after[0].n).toBe(2);
  });

  test("B2: when the api's durable consumer was deleted, the api declares it again and a payment published meanwhile pays its order once, within 60 s", async () => {
    const order = await stack.newOrder();
    const jsm = await stack.nats.manager();
    const { stream } = stack.topology.payments;
    const durable = stack.topology.paymentEventsConsumer;
    await eventually(
      () => jsm.consumers.info(stream, durable).catch(() => undefined),
      15_000,
      "the api's consumer",
    );
    expect(await jsm.consumers.delete(stream, durable)).toBe(true);
    const notification = succeeded(order);
    const sent = Date.now();
    expect((await stack.notify(notification)).status).toBe(200);
    await stack.paid(order.order_id, 60_000);
    const paidInMs = Date.now() - sent;
    console.log(`B2: consumer deleted → paid in ${paidInMs} ms`);
    expect(paidInMs).toBeLessThan(60_000);
    expect(await paidEntries(order.order_id)).toBe(1);
    expect(await stack.publishedOrdersPaid(order.order_id)).toHaveLength(1);
    // The consumer is back for everything after.
    const next = await stack.newOrder();
    expect((await stack.notify(succeeded(next))).status).toBe(200);
    await stack.paid(next.order_id, 15_000);
  });

  test("B2: after PAYMENTS is deleted and re-created, a payment it held that the api had not applied is published again and pays its order once", async () => {
    const order = await stack.newOrder();
    await stack.api.stop();
    const notification = succeeded(order);
    expect((await stack.notify(notification)).status).toBe(200);
    await eventually(
      async () =>
        (
          await stack.sql`
            select 1 from payments.outbox
            where message_id = ${notification.id} and published_at is not null`
        )[0],
      15_000,
      "the notification's message acked by JetStream",
    );
    const jsm = await stack.nats.manager();
    const { stream } = stack.topology.payments;
    expect(await jsm.streams.delete(stream)).toBe(true);
    // Payments declares its stream again when it starts (or reconnects to NATS).
    await stack.payments.stop();
    await stack.payments.start();
    await stack.api.start();
    await stack.paid(order.order_id, 60_000);
    expect(await paidEntries(order.order_id)).toBe(1);
    expect(await stack.publishedOrdersPaid(order.order_id)).toHaveLength(1);
    const copies = await stack.sql`
      select message_id from payments.outbox
      where payload->>'notification_id' = ${notification.id} order by id`;
    expect(copies.map((row) => row.message_id)).toEqual([
      notification.id,
      expect.stringMatching(new RegExp(`^${notification.id}:resend:\\d+$`)),
    ]);
  });
});

describe("anti-entropy's window and paging (in-process)", () => {
  let api: Awaited<ReturnType<typeof startApi>>;
  let payments: Awaited<ReturnType<typeof startPayments>>;
  let nats: NatsLink;
  let answerer: AppliedAnswerer;

  beforeAll(async () => {
    api = await startApi();
    payments = await startPayments({ env: { ANTI_ENTROPY_INTERVAL_SECONDS: "0" } });
    // One connection for both sides: the api's answerer and payments' questions.
    nats = new NatsLink(testNatsUrl, "anti-entropy-test", quiet);
    await nats.start();
    answerer = new AppliedAnswerer({ sql: api.sql, topology: payments.topology, logger: quiet });
    answerer.listen(nats.nc);
  });
  afterAll(async () => {
    answerer.stop();
    await payments.sql`delete from payments.outbox where subject = ${payments.topology.payments.orderRefunded}`;
    await nats.close();
    await api.close();
    await payments.close();
  });

  const checker = (metrics = new Metrics(), graceMs = 30_000) =>
    new AntiEntropy({
      sql: payments.sql,
      nats,
      topology: payments.topology,
      logger: quiet,
      metrics,
      outboxWritten: () => {},
      settings: { intervalMs: 0, windowMs: 24 * 3_600_000, graceMs },
      pageSize: 2,
    });

  /** An outbox row of this stack's, published `ago` before now, that the api may have applied. */
  async function published(ago: string, applied = false) {
    const id = unique("ae");
    await payments.sql`
      insert into payments.outbox (subject, message_id, payload, published_at)
      values (${payments.topology.payments.orderRefunded}, ${id},
        ${payments.sql.json({ notification_id: id, order_id: 1, amount: 1, currency: "USD" })},
        now() - ${ago}::interval)`;
    if (applied)
      await api.sql`
        insert into api.processed_notifications (notification_id, order_id, outcome)
        values (${id}, 1, 'refunded')`;
    return id;
  }

  const copiesOf = async (ids: string[]) =>
    (
      await payments.sql`
        select payload->>'notification_id' as id from payments.outbox
        where payload->>'notification_id' = any(${ids}) and message_id like '%:resend:%'`
    ).map((row) => row.id as string);

  test("B2: a run compares only the trailing window, in pages, and the next starts where it ended, so history costs nothing", async () => {
    const outside = [await published("25 hours"), await published("30 days")];
    const applied = [await published("10 minutes", true), await published("9 minutes", true)];
    const missing = [
      await published("8 minutes"),
      await published("7 minutes"),
      await published("6 minutes"),
    ];
    const justNow = await published("5 seconds");
    const metrics = new Metrics();
    const run = await checker(metrics).runOnce();
    // Five messages in the window, asked in pages of two; nothing outside it, nothing in its grace.
    expect(run).toMatchObject({ checked: 5, found: 3, applied: 3, errors: 0 });
    expect((await copiesOf(missing)).sort()).toEqual([...missing].sort());
    expect(await copiesOf([...outside, ...applied, justNow])).toEqual([]);
    const gaps = await metrics.counter("money_path_gaps_found_total", "").get();
    expect(gaps.values[0]?.value).toBe(3);
    const [row] = await payments.sql`
      select checked, found, applied, errors, finished_at from payments.reconciliation_runs
      where id = ${run?.id ?? 0}`;
    expect(row).toMatchObject({ checked: 5, found: 3, applied: 3, errors: 0 });

    // The next run starts a minute before where this one ended: the 6-10 minute old rows are
    // not read again (the copies are not published yet; the relay is not running here).
    const next = await checker().runOnce();
    expect(next).toMatchObject({ checked: 0, found: 0, errors: 0 });
  });

  test("B2: messages the relay marked published in one batch (one published_at) are each compared, across pages", async () => {
    // Ids across a change in their number of digits, so an order by their text would differ.
    const ids = [99_999_999_999_998, 99_999_999_999_999, 100_000_000_000_000, 100_000_000_000_001];
    // Past the grace, and after where the previous test's run ended less the overlap.
    const notifications = ids.map(() => unique("batch"));
    await payments.sql`
      insert into payments.outbox (id, subject, message_id, payload, published_at)
      select id, ${payments.topology.payments.orderRefunded}, notification_id,
        pg_catalog.jsonb_build_object('notification_id', notification_id),
        now() - interval '40 seconds'
      from unnest(${ids}::bigint[], ${notifications}::text[]) as batch(id, notification_id)`;
    const run = await checker().runOnce();
    expect(run?.errors).toBe(0);
    expect((await copiesOf(notifications)).sort()).toEqual([...notifications].sort());
  });

  test("B2: while another replica holds the checkpoint, a run returns at once and does nothing", async () => {
    const missing = await published("3 minutes");
    const scope = payments.topology.payments.stream;
    await payments.sql.begin(async (tx) => {
      await tx`
        select 1 from payments.reconciliation_checkpoints
        where kind = 'inbox' and scope = ${scope} for update`;
      const started = Date.now();
      expect(await checker().runOnce()).toBeUndefined();
      expect(Date.now() - started).toBeLessThan(2_000);
    });
    expect(await copiesOf([missing])).toEqual([]);
  });

  test("B2: when the api does not answer, the run is cut short and the checkpoint stays", async () => {
    const scope = payments.topology.payments.stream;
    const before = await payments.sql`
      select checked_until from payments.reconciliation_checkpoints
      where kind = 'inbox' and scope = ${scope}`;
    const missing = await published("2 minutes");
    // Back to before the checkpoint, so this run reads it.
    await payments.sql`
      update payments.reconciliation_checkpoints set checked_until = now() - interval '5 minutes'
      where kind = 'inbox' and scope = ${scope}`;
    answerer.stop();
    try {
      const run = await checker().runOnce();
      expect(run).toMatchObject({ errors: 1, found: 0, applied: 0 });
      const [after] = await payments.sql`
        select checked_until > now() - interval '5 minutes 1 second' and
          checked_until < now() - interval '4 minutes' as kept
        from payments.reconciliation_checkpoints where kind = 'inbox' and scope = ${scope}`;
      expect(after.kept).toBe(true);
      expect(await copiesOf([missing])).toEqual([]);
    } finally {
      answerer = new AppliedAnswerer({ sql: api.sql, topology: payments.topology, logger: quiet });
      answerer.listen(nats.nc);
    }
    expect(before).toHaveLength(1);
    // Answered again: the next run covers the gap and finds it.
    const run = await checker().runOnce();
    expect(run?.errors).toBe(0);
    expect(run?.found).toBeGreaterThanOrEqual(1);
    expect(await copiesOf([missing])).toEqual([missing]);
  });

  test("B2: what was published after the oldest message the api's consumer has yet to apply is not missing yet: a backlog, not a loss", async () => {
    const { topology } = payments;
    const jsm = await nats.manager();
    await ensureStream(jsm, ownStreamOf(topology, "payments"));
    await ensurePaymentConsumer(jsm, topology, 5_000);
    // The api's answers now say how far behind its consumer is.
    answerer.stop();
    answerer = new AppliedAnswerer({ sql: api.sql, topology, logger: quiet, nats });
    answerer.listen(nats.nc);
    try {
      // One message waits for the consumer, which nobody pulls from here: a backlog.
      await nats.jetstream()?.publish(topology.payments.orderRefunded, JSON.stringify({}));
      await Bun.sleep(1_200);
      await payments.sql`
        update payments.reconciliation_checkpoints set checked_until = now() - interval '5 minutes'
        where kind = 'inbox' and scope = ${topology.payments.stream}`;
      const lost = await published("4 minutes");
      const waiting = await published("1100 milliseconds");
      const run = await checker(new Metrics(), 1_000).runOnce();
      expect(run?.errors).toBe(0);
      expect(await copiesOf([lost, waiting])).toEqual([lost]);

      // The backlog is gone (here: purged, so the waiting message was lost after all). The
      // checkpoint stayed before it, so the next run, however much later, compares it again.
      await jsm.streams.purge(topology.payments.stream);
      await Bun.sleep(1_000);
      const next = await checker(new Metrics(), 1_000).runOnce();
      expect(next).toMatchObject({ found: 1, applied: 1, errors: 0 });
      expect((await copiesOf([lost, waiting])).sort()).toEqual([lost, waiting].sort());
    } finally {
      await jsm.streams.delete(topology.payments.stream).catch(() => {});
      answerer.stop();
      answerer = new AppliedAnswerer({ sql: api.sql, topology, logger: quiet });
      answerer.listen(nats.nc);
    }
  });

  test("B3: GET /api/reconciliation/runs lists this stack's inbox runs newest first, to an admin only", async () => {
    const app = payments.app();
    const list = async (query: string, bearer?: string) => {
      const response = await app.handle(
        new Request(`http://localhost/api/reconciliation/runs${query}`, {
          headers: bearer ? { authorization: `Bearer ${bearer}` } : {},
        }),
      );
      return { status: response.status, json: (await response.json()) as any };
    };
    expect((await list("")).status).toBe(401);
    expect((await list("", await token({ sub: unique("cust") }))).status).toBe(403);
    expect(
      (await list("?page=0", await token({ sub: unique("ops"), scope: "admin" }))).status,
    ).toBe(400);

    const admin = await token({ sub: unique("ops"), scope: "admin" });
    const run = await checker().runOnce();
    const { status, json } = await list("?per_page=2", admin);
    expect(status).toBe(200);
    const stored = await payments.sql`
      select count(*)::int as n from payments.reconciliation_runs
      where scope = ${payments.topology.payments.stream}`;
    expect(json).toMatchObject({ page: 1, per_page: 2, total: stored[0].n });
    expect(json.items).toHaveLength(2);
    expect(json.items[0]).toEqual({
      id: run?.id,
      provider: null,
      kind: "inbox",
      window_from: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      window_to: expect.stringMatching(/Z$/),
      started_at: expect.stringMatching(/Z$/),
      finished_at: expect.stringMatching(/Z$/),
      checked: run?.checked,
      found: run?.found,
      applied: run?.applied,
      errors: 0,
    });
    expect(json.items[1].id).toBeLessThan(json.items[0].id);
    expect(Date.parse(json.items[0].window_to)).toBeLessThanOrEqual(Date.now() - 29_000);

    // The console's "last run of each kind": one kind, or one provider, at a time.
    const inbox = await list("?per_page=1&kind=inbox", admin);
    expect(inbox.json.items.map((r: { id: number }) => r.id)).toEqual([run?.id]);
    const report = await list("?kind=report&provider=adyen", admin);
    expect(report.status).toBe(200);
    expect(
      report.json.items.every(
        (r: { kind: string; provider: string }) => r.kind === "report" && r.provider === "adyen",
      ),
    ).toBe(true);
    const wrong = await list("?kind=everything", admin);
    expect(wrong.status).toBe(400);
    expect(wrong.json.errors[0].path).toBe("/kind");
  });

  test("B3: inbox runs that found nothing are listed for a day, the others for 30 days", async () => {
    const scope = payments.topology.payments.stream;
    const oldRun = async (age: string, found: number, errors: number) => {
      const [row] = await payments.sql<{ id: string }[]>`
        insert into payments.reconciliation_runs
          (scope, kind, window_from, window_to, started_at, finished_at, found, applied, errors)
        select ${scope}, 'inbox', at, at, at, at, ${found}, ${found}, ${errors}
        from (select now() - ${age}::interval as at) as old
        returning id::text`;
      return row.id;
    };
    const runs = {
      quiet: await oldRun("2 days", 0, 0),
      found: await oldRun("2 days", 1, 0),
      "cut short": await oldRun("2 days", 0, 1),
      "found long ago": await oldRun("31 days", 1, 0),
    };
    await checker().runOnce();
    const kept = await payments.sql`
      select id::text from payments.reconciliation_runs
      where id = any(${Object.values(runs)}::bigint[])`;
    const keptLabels = Object.entries(runs)
      .filter(([, id]) => kept.some((row) => row.id === id))
      .map(([label]) => label)
      .sort();
    expect(keptLabels).toEqual(["cut short", "found"]);
  });
});

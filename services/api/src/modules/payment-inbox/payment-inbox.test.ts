import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  type PaymentMessage,
  parseOrderEvent,
  streamsOf,
} from "@commerce/shared/contract/messages";
import { connectDatabase } from "@commerce/shared/platform/database";
import { createLogger, type Logger } from "@commerce/shared/platform/logger";
import { Metrics } from "@commerce/shared/platform/metrics";
import { ensureStream, NatsLink } from "@commerce/shared/platform/nats";
import {
  formatTraceparent,
  idTracer,
  parseTraceparent,
  type TraceContext,
} from "@commerce/shared/platform/tracing";
import { eventually, paymentMessageFor, testNatsUrl, unique } from "@commerce/testing/basics";
import { type ApiHarness, startApi } from "@commerce/testing/in-process";
import { headers } from "nats";
import { createDatabase } from "../../db";
import { applyPaymentMessage } from "./apply";
import { payInOneStatement } from "./batcher";
import { PaymentConsumer } from "./consumer";
import { ensurePaymentConsumer } from "./subscription";

let api: ApiHarness;
let nats: NatsLink;
const consumers: PaymentConsumer[] = [];
const quiet = createLogger("error", {}, () => {});

beforeAll(async () => {
  api = await startApi();
  const { topology } = api.deps;
  nats = new NatsLink(testNatsUrl, "order-paid-test", quiet);
  await nats.start();
  const jsm = await nats.manager();
  for (const stream of streamsOf(topology)) await ensureStream(jsm, stream);
  await ensurePaymentConsumer(jsm, topology, 5_000);
});

afterAll(async () => {
  await Promise.all(consumers.map((c) => c.stop()));
  const jsm = await nats.manager();
  for (const stream of streamsOf(api.deps.topology))
    await jsm.streams.delete(stream.name).catch(() => {});
  await nats.close();
  await api.close();
});

function startConsumer(db = api.db, logger: Logger = quiet, metrics = new Metrics()) {
  const consumer = new PaymentConsumer({
    db,
    nats,
    topology: api.deps.topology,
    logger,
    metrics,
    tracer: idTracer,
    outboxWritten: () => {},
  });
  consumer.start();
  consumers.push(consumer);
  return consumer;
}

async function newOrder(price = 700, qty = 2) {
  const product = await api.product({ price });
  const { token } = await api.customer();
  const res = await api.call("POST", "/api/orders", {
    token,
    body: { product_id: product.id, qty },
  });
  return res.json as { order_id: number; amount: number; currency: string };
}

async function publish(
  message: PaymentMessage,
  msgID = message.notification_id,
  traceparent?: string,
  subject = api.deps.topology.payments.orderPaid,
) {
  const js = nats.jetstream();
  if (!js) throw new Error("no jetstream");
  const h = headers();
  if (traceparent) h.set("traceparent", traceparent);
  await js.publish(subject, JSON.stringify(message), { msgID, headers: h });
}

const orderRow = async (id: number) =>
  (await api.sql`select status, paid_at from api.orders where id = ${id}`)[0];
const processed = async (notificationId: string) =>
  (
    await api.sql`select outcome from api.processed_notifications where notification_id = ${notificationId}`
  )[0];
const ordersPaid = (orderId: number) =>
  api.sql`select payload from api.outbox where message_id = ${`order-paid-${orderId}`}`;

describe("order-paid consumer", () => {
  test("M1, M2, R5: a payments.order.paid message pays the order and writes one orders.paid (source webhook)", async () => {
    startConsumer();
    const order = await newOrder();
    const message = paymentMessageFor(order);
    await publish(message);
    const row = await eventually(async () => {
      const r = await orderRow(order.order_id);
      return r.status === "paid" ? r : undefined;
    });
    expect(row.paid_at).not.toBeNull();
    expect((await processed(message.notification_id)).outcome).toBe("paid");
    const outbox = await ordersPaid(order.order_id);
    expect(outbox).toHaveLength(1);
    expect(outbox[0].payload).toMatchObject({
      order_id: order.order_id,
      amount: order.amount,
      source: "webhook",
    });
  });

  test("B3, T1: a payment a reconciliation run found pays its order with source reconciliation on the timeline and in orders.paid", async () => {
    startConsumer();
    const order = await newOrder();
    const message = { ...paymentMessageFor(order), source: "reconciliation" as const };
    await publish(message);
    await eventually(async () =>
      (await orderRow(order.order_id)).status === "paid" ? true : undefined,
    );
    const [entry] = await api.sql<{ source: string; notification_id: string }[]>`
      select source, notification_id from api.order_events
      where order_id = ${order.order_id} and type = 'paid'`;
    expect(entry).toEqual({ source: "reconciliation", notification_id: message.notification_id });
    const [paid] = await ordersPaid(order.order_id);
    expect(paid.payload).toMatchObject({ order_id: order.order_id, source: "reconciliation" });
    const res = await api.call("GET", `/api/orders/${order.order_id}/events`, {
      token: await api.admin(),
    });
    expect(res.status).toBe(200);
    const items = (res.json as { items: { type: string; source: string }[] }).items;
    expect(items.find((item) => item.type === "paid")?.source).toBe("reconciliation");
  });

  test("O8: the move continues the message's traceparent in its log line and its orders.paid", async () => {
    // The consumers of earlier tests share the durable consumer: this one must get the message.
    await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
    const lines: string[] = [];
    startConsumer(
      api.db,
      createLogger("info", {}, (line) => lines.push(line)),
    );
    const order = await newOrder();
    const message = paymentMessageFor(order);
    const traceId = crypto.randomUUID().replaceAll("-", "");
    const traceparent = `00-${traceId}-00f067aa0ba902b7-01`;
    await publish(message, message.notification_id, traceparent);
    const applied = await eventually(async () =>
      lines
        .map((line) => JSON.parse(line))
        .find(
          (line) =>
            line.msg === "payment message applied" &&
            line.notification_id === message.notification_id,
        ),
    );
    expect(applied).toMatchObject({ trace_id: traceId, order_id: order.order_id });
    expect(applied.span_id).not.toBe("00f067aa0ba902b7");
    const [row] =
      await api.sql`select headers from api.outbox where message_id = ${`order-paid-${order.order_id}`}`;
    const sent = parseTraceparent(row.headers.traceparent);
    expect(sent).toMatchObject({ traceId, sampled: true });
    expect(sent?.spanId).not.toBe("00f067aa0ba902b7");
  });

  test("M2: a malformed payment or dispute message is terminated, counted invalid and logged with its subject and stream sequence", async () => {
    // The consumers of earlier tests share the durable consumer: this one must get the messages.
    await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
    const lines: string[] = [];
    const metrics = new Metrics();
    startConsumer(
      api.db,
      createLogger("info", {}, (line) => lines.push(line)),
      metrics,
    );
    const { payments, paymentEventsConsumer } = api.deps.topology;
    const js = nats.jetstream();
    if (!js) throw new Error("no jetstream");
    const paid = await js.publish(payments.orderPaid, JSON.stringify({ notification_id: 7 }), {
      msgID: unique("malformed"),
    });
    const disputed = await js.publish(payments.orderDisputed, "not json", {
      msgID: unique("malformed"),
    });
    const dropped = await eventually(async () => {
      const found = lines
        .map((line) => JSON.parse(line))
        .filter((line) => line.msg === "payment message is malformed; dropped");
      return found.length >= 2 ? found : undefined;
    });
    expect(
      dropped
        .map(({ level, subject, stream_seq }) => ({ level, subject, stream_seq }))
        .sort((a, b) => a.stream_seq - b.stream_seq),
    ).toEqual([
      { level: "error", subject: payments.orderPaid, stream_seq: paid.seq },
      { level: "error", subject: payments.orderDisputed, stream_seq: disputed.seq },
    ]);
    expect(await metrics.render()).toContain('payment_messages_total{outcome="invalid"} 2');
    // Terminated, not left to be redelivered: nothing of the consumer waits for an ack.
    const jsm = await nats.manager();
    await eventually(async () => {
      const info = await jsm.consumers.info(payments.stream, paymentEventsConsumer);
      return info.num_ack_pending === 0 && info.num_pending === 0 ? true : undefined;
    });
  });

  test("M2: a notification delivered again is acked and changes nothing", async () => {
    startConsumer();
    const order = await newOrder();
    const message = paymentMessageFor(order);
    await publish(message);
    await eventually(async () =>
      (await orderRow(order.order_id)).status === "paid" ? true : undefined,
    );
    const before = await orderRow(order.order_id);
    // A different JetStream message id, so the stream does not drop it: a true redelivery.
    await publish(message, unique("redelivery"));
    const marker = paymentMessageFor(await newOrder());
    await publish(marker);
    await eventually(async () => (await processed(marker.notification_id)) ?? undefined);
    expect(await orderRow(order.order_id)).toEqual(before);
    expect(await ordersPaid(order.order_id)).toHaveLength(1);
  });

  test("L4, M2: a second, different payment for a paid order is kept for review as duplicate_payment; no second orders.paid", async () => {
    startConsumer();
    const order = await newOrder();
    await publish(paymentMessageFor(order));
    await eventually(async () =>
      (await orderRow(order.order_id)).status === "paid" ? true : undefined,
    );
    const second = paymentMessageFor(order);
    await publish(second);
    const outcome = await eventually(
      async () => (await processed(second.notification_id))?.outcome,
    );
    expect(outcome).toBe("duplicate_payment");
    expect(await ordersPaid(order.order_id)).toHaveLength(1);
    const [review] =
      await api.sql`select reason, notification_id from api.payment_reviews where order_id = ${order.order_id}`;
    expect(review).toEqual({
      reason: "duplicate_payment",
      notification_id: second.notification_id,
    });
  });

  test("M2: amount or currency mismatch leaves the order unpaid and stores the case for review", async () => {
    startConsumer();
    const order = await newOrder();
    const wrongAmount = paymentMessageFor(order, { amount: order.amount - 1 });
    const wrongCurrency = paymentMessageFor(order, { currency: "EUR" });
    await publish(wrongAmount);
    await publish(wrongCurrency);
    for (const m of [wrongAmount, wrongCurrency])
      expect(await eventually(async () => (await processed(m.notification_id))?.outcome)).toBe(
        "mismatch",
      );
    expect((await orderRow(order.order_id)).status).toBe("created");
    const reviews =
      await api.sql`select reason, message from api.payment_reviews where order_id = ${order.order_id}`;
    expect(reviews.map((r) => r.reason)).toEqual(["mismatch", "mismatch"]);
    expect(await ordersPaid(order.order_id)).toHaveLength(0);
  });

  test("M2: an unknown order is stored for review and acked", async () => {
    startConsumer();
    const message = paymentMessageFor({
      order_id: 9_000_000_000_000 + Math.floor(Math.random() * 1e9),
      amount: 1,
      currency: "USD",
    });
    await publish(message);
    expect(await eventually(async () => (await processed(message.notification_id))?.outcome)).toBe(
      "unknown_order",
    );
    const [review] =
      await api.sql`select reason from api.payment_reviews where notification_id = ${message.notification_id}`;
    expect(review.reason).toBe("unknown_order");
  });

  test("M2: a database failure naks the message; it is applied once the database answers", async () => {
    const deadSql = connectDatabase("postgres://root@127.0.0.1:1/test", { max: 1 });
    const broken = startConsumer(createDatabase(deadSql));
    const order = await newOrder();
    const message = paymentMessageFor(order);
    await Promise.all(consumers.filter((c) => c !== broken).map((c) => c.stop()));
    await publish(message);
    await Bun.sleep(300);
    expect((await orderRow(order.order_id)).status).toBe("created");
    await broken.stop();
    await deadSql.end();
    startConsumer();
    await eventually(
      async () => ((await orderRow(order.order_id)).status === "paid" ? true : undefined),
      10_000,
    );
    expect(await ordersPaid(order.order_id)).toHaveLength(1);
  });

  test("M4, W8: three consumers sharing the durable consumer apply 30 notifications × 5 copies once each", async () => {
    for (let i = 0; i < 3; i++) startConsumer();
    const orders = await Promise.all(Array.from({ length: 30 }, () => newOrder(100, 1)));
    const messages = orders.map((o) => paymentMessageFor(o));
    await Promise.all(
      messages.flatMap((m) => Array.from({ length: 5 }, () => publish(m, unique("copy")))),
    );
    for (const order of orders)
      await eventually(
        async () => ((await orderRow(order.order_id)).status === "paid" ? true : undefined),
        10_000,
      );
    const ids = orders.map((o) => o.order_id);
    const [{ n }] =
      await api.sql`select count(*)::int as n from api.outbox where message_id in ${api.sql(
        ids.map((id) => `order-paid-${id}`),
      )}`;
    expect(n).toBe(30);
    const rows =
      await api.sql`select count(*)::int as n from api.processed_notifications where notification_id in ${api.sql(
        messages.map((m) => m.notification_id),
      )}`;
    expect(rows[0].n).toBe(30);
  });
});

describe("applying payments at once (M5)", () => {
  const apply = (message: PaymentMessage) =>
    applyPaymentMessage(api.db, api.deps.topology, "succeeded", message);

  test("M3, M5: the orders.paid, timeline entry and processed row a payment writes in one statement match an admin's move", async () => {
    const byWebhook = await newOrder();
    const message = paymentMessageFor(byWebhook);
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const trace = parseTraceparent(traceparent);
    expect(await applyPaymentMessage(api.db, api.deps.topology, "succeeded", message, trace)).toBe(
      "paid",
    );
    const byAdmin = await newOrder();
    const patched = await api.call("PATCH", `/api/orders/${byAdmin.order_id}`, {
      token: await api.admin(),
      body: { status: "paid", note: "paid by bank transfer" },
    });
    expect(patched.status).toBe(200);

    const [webhook] = await api.sql`
      select payload, headers, subject from api.outbox
      where message_id = ${`order-paid-${byWebhook.order_id}`}`;
    const [manual] = await api.sql`
      select payload, subject from api.outbox where message_id = ${`order-paid-${byAdmin.order_id}`}`;
    expect(parseOrderEvent(webhook.payload)).toBeDefined();
    expect(webhook.subject).toBe(manual.subject);
    // V5, M3: an admin's move names its actor; a payment's names its notification instead.
    expect(manual.payload.actor).toEqual(expect.any(String));
    expect(Object.keys(webhook.payload).sort()).toEqual(
      [...Object.keys(manual.payload).filter((key) => key !== "actor"), "notification_id"].sort(),
    );
    const read = await api.call("GET", `/api/orders/${byWebhook.order_id}`, {
      token: await api.admin(),
    });
    expect(read.json).toMatchObject({ status: "paid", expires_at: null });
    expect(webhook.payload).toEqual({
      order_id: byWebhook.order_id,
      status: "paid",
      amount: byWebhook.amount,
      currency: byWebhook.currency,
      at: read.json.paid_at,
      paid_at: read.json.paid_at,
      source: "webhook",
      notification_id: message.notification_id,
      // M3: who ordered what, as the order's answer says.
      customer_id: (
        await api.sql`select customer_id from api.orders where id = ${byWebhook.order_id}`
      )[0].customer_id,
      items: read.json.items.map(({ amount: _, ...line }: { amount: number }) => line),
    });
    expect(webhook.headers).toEqual({ traceparent: formatTraceparent(trace as TraceContext) });
    const timeline = await api.sql`
      select type, source, notification_id, detail from api.order_events
      where order_id = ${byWebhook.order_id} order by id`;
    expect(timeline.map((e) => e.type)).toEqual(["created", "paid"]);
    expect(timeline[1]).toEqual({
      type: "paid",
      source: "webhook",
      notification_id: message.notification_id,
      // M1, T1: the payment reference that paid it (the notification id when the message names none).
      detail: { payment_ref: message.notification_id, provider: "generic" },
    });
    expect((await processed(message.notification_id)).outcome).toBe("paid");
  });

  test("M2, M5: one statement pays the payable orders of a batch and leaves every other payment untouched", async () => {
    const payable = await Promise.all(Array.from({ length: 20 }, () => newOrder(100, 1)));
    const twice = await newOrder();
    const mismatched = await newOrder();
    const alreadyPaid = await newOrder();
    expect(await apply(paymentMessageFor(alreadyPaid))).toBe("paid");
    const first = paymentMessageFor(twice);
    const second = paymentMessageFor(twice);
    const untouched = [
      second,
      paymentMessageFor(mismatched, { amount: mismatched.amount + 1 }),
      paymentMessageFor(alreadyPaid),
      paymentMessageFor({
        order_id: 9_100_000_000_000 + Math.floor(Math.random() * 1e9),
        amount: 1,
        currency: "USD",
      }),
    ];
    const batch = [...payable.map((o) => paymentMessageFor(o)), first, ...untouched];
    const paid = await payInOneStatement(
      api.db,
      api.deps.topology,
      batch.map((message) => ({ message })),
    );
    expect([...paid].sort()).toEqual(
      [...payable.map((_, i) => batch[i].notification_id), first.notification_id].sort(),
    );
    for (const order of [...payable, twice]) {
      expect((await orderRow(order.order_id)).status).toBe("paid");
      expect(await ordersPaid(order.order_id)).toHaveLength(1);
    }
    expect((await orderRow(mismatched.order_id)).status).toBe("created");
    for (const message of untouched)
      expect(await processed(message.notification_id)).toBeUndefined();
    // The general path then judges them: the second payment of one order is a possible second charge.
    expect(await apply(second)).toBe("duplicate_payment");
  });

  test("M2, M5: ten batches racing with copies of one notification and other payments for one order pay it once", async () => {
    const order = await newOrder();
    const message = paymentMessageFor(order);
    const others = Array.from({ length: 10 }, () => paymentMessageFor(order));
    const results = await Promise.all([
      ...Array.from({ length: 10 }, () =>
        payInOneStatement(api.db, api.deps.topology, [{ message }]),
      ),
      ...others.map((other) => payInOneStatement(api.db, api.deps.topology, [{ message: other }])),
    ]);
    expect(results.reduce((n, paid) => n + paid.size, 0)).toBe(1);
    expect(await ordersPaid(order.order_id)).toHaveLength(1);
    const [{ n }] =
      await api.sql`select count(*)::int as n from api.order_events where order_id = ${order.order_id} and type = 'paid'`;
    expect(n).toBe(1);
    // The general path is then just as careful with the rest.
    const outcomes = await Promise.all([apply(message), ...others.map(apply)]);
    expect(outcomes.filter((o) => o === "paid")).toHaveLength(0);
    expect(await ordersPaid(order.order_id)).toHaveLength(1);
  });

  test("M5: one consumer applies 40 orders' payment then refund, sent back to back, in order for each order", async () => {
    await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
    startConsumer();
    const orders = await Promise.all(Array.from({ length: 40 }, () => newOrder(300, 1)));
    const { orderRefunded } = api.deps.topology.payments;
    for (const order of orders) {
      await publish(paymentMessageFor(order));
      const refund = paymentMessageFor(order);
      await publish(refund, refund.notification_id, undefined, orderRefunded);
    }
    for (const order of orders)
      await eventually(
        async () => ((await orderRow(order.order_id)).status === "refunded" ? true : undefined),
        10_000,
      );
    const reviews = await api.sql`
      select count(*)::int as n from api.payment_reviews
      where order_id in ${api.sql(orders.map((o) => o.order_id))}`;
    expect(reviews[0].n).toBe(0);
  });
});

describe("a notification replayed after its processed row was lost (V3)", () => {
  const apply = (kind: "succeeded" | "refunded" | "failed", message: PaymentMessage) =>
    applyPaymentMessage(api.db, api.deps.topology, kind, message);
  const forget = (notificationId: string) =>
    api.sql`delete from api.processed_notifications where notification_id = ${notificationId}`;
  const reviewsOf = (notificationId: string) =>
    api.sql`select reason from api.payment_reviews where notification_id = ${notificationId}`;
  const eventsOf = (orderId: number) =>
    api.sql`select message_id from api.outbox where payload->>'order_id' = ${String(orderId)} order by id`;

  test("V3: the payment that paid the order is a duplicate, not a duplicate_payment review; one orders.paid", async () => {
    const order = await newOrder();
    const message = paymentMessageFor(order);
    expect(await apply("succeeded", message)).toBe("paid");
    for (let replay = 0; replay < 2; replay++) {
      await forget(message.notification_id);
      expect(await apply("succeeded", message)).toBe("duplicate");
    }
    expect((await orderRow(order.order_id)).status).toBe("paid");
    expect(await ordersPaid(order.order_id)).toHaveLength(1);
    expect(await reviewsOf(message.notification_id)).toHaveLength(0);
    expect((await processed(message.notification_id)).outcome).toBe("duplicate");
    // Another notification for the paid order is still a possible second charge.
    const other = paymentMessageFor(order);
    expect(await apply("succeeded", other)).toBe("duplicate_payment");
  });

  test("V3: a refund that refunded the order, and the payment before it, stay applied once", async () => {
    const order = await newOrder();
    const paid = paymentMessageFor(order);
    const refund = paymentMessageFor(order);
    expect(await apply("succeeded", paid)).toBe("paid");
    expect(await apply("refunded", refund)).toBe("refunded");
    await forget(paid.notification_id);
    await forget(refund.notification_id);
    expect(await apply("refunded", refund)).toBe("duplicate");
    expect(await apply("succeeded", paid)).toBe("duplicate");
    expect((await orderRow(order.order_id)).status).toBe("refunded");
    expect((await eventsOf(order.order_id)).map((e) => e.message_id)).toEqual([
      `order-created-${order.order_id}`,
      `order-paid-${order.order_id}`,
      `order-refunded-${order.order_id}`,
    ]);
    expect(
      await api.sql`select 1 from api.payment_reviews where order_id = ${order.order_id}`,
    ).toHaveLength(0);
  });

  test("V3: a failed payment writes one payment_failed, and a reviewed notification one review", async () => {
    const order = await newOrder();
    const failed = paymentMessageFor(order);
    const mismatch = paymentMessageFor(order, { amount: order.amount + 1 });
    expect(await apply("failed", failed)).toBe("payment_failed");
    expect(await apply("succeeded", mismatch)).toBe("mismatch");
    await forget(failed.notification_id);
    await forget(mismatch.notification_id);
    expect(await apply("failed", failed)).toBe("duplicate");
    expect(await apply("succeeded", mismatch)).toBe("duplicate");
    const failures = (await eventsOf(order.order_id)).filter((e) =>
      e.message_id.startsWith("order-payment_failed-"),
    );
    expect(failures).toHaveLength(1);
    expect((await reviewsOf(mismatch.notification_id)).map((r) => r.reason)).toEqual(["mismatch"]);
    expect((await orderRow(order.order_id)).status).toBe("created");
  });

  test("V3: after the api's database is restored to before the payment, the replay pays the order once", async () => {
    const order = await newOrder();
    const message = paymentMessageFor(order);
    await forget(message.notification_id);
    expect(await apply("succeeded", message)).toBe("paid");
    expect(await apply("succeeded", message)).toBe("duplicate");
    expect(await ordersPaid(order.order_id)).toHaveLength(1);
  });
});

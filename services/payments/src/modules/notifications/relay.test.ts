import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connectDatabase } from "@commerce/shared/platform/database";
import { createLogger } from "@commerce/shared/platform/logger";
import { ensureStream, NatsLink } from "@commerce/shared/platform/nats";
import { OutboxRelay } from "@commerce/shared/platform/outbox/relay";
import { eventually, testNatsUrl } from "@commerce/testing/basics";
import { type PaymentsHarness, startPayments } from "@commerce/testing/in-process";
import {
  collectingLogger,
  notificationRequest,
  paymentSucceeded,
  rowsFor,
  uniqueOrderId,
} from "@commerce/testing/payments-requests";
import type { JetStreamManager } from "nats";

const silent = createLogger("error", {}, () => {});

let payments: PaymentsHarness;
let nats: NatsLink;
let jsm: JetStreamManager;
beforeAll(async () => {
  payments = await startPayments();
  nats = new NatsLink(testNatsUrl, "payments-test", silent);
  await nats.start();
  jsm = await nats.manager();
  await ensureStream(jsm, {
    name: payments.topology.payments.stream,
    subjects: payments.topology.payments.subjects,
  });
});
afterAll(async () => {
  await jsm.streams.delete(payments.topology.payments.stream).catch(() => {});
  await nats.close();
  await payments.close();
});

const workingRelay = (intervalMs?: number) =>
  new OutboxRelay({
    sql: payments.sql,
    schema: "payments",
    subjects: [payments.topology.payments.orderPaid],
    jetstream: () => nats.jetstream(),
    logger: silent,
    intervalMs,
  });

const outboxRow = async (orderId: number) => {
  const [row] = await payments.sql`
    select message_id, payload, published_at from payments.outbox
    where payload->>'order_id' = ${String(orderId)}`;
  return row;
};

const published = (orderId: number) =>
  eventually(
    async () => {
      const row = await outboxRow(orderId);
      return row?.published_at ? row : undefined;
    },
    5000,
    `outbox row of order ${orderId} to be published`,
  );

/** The stream's last order-paid message: its Nats-Msg-Id and payload. */
async function lastOrderPaid() {
  const message = await jsm.streams.getMessage(payments.topology.payments.stream, {
    last_by_subj: payments.topology.payments.orderPaid,
  });
  return { msgId: message.header.get("Nats-Msg-Id"), payload: message.json<unknown>() };
}

const messagesInStream = async () =>
  (await jsm.streams.info(payments.topology.payments.stream)).state.messages;

describe("publication", () => {
  test("W6: right after commit the relay publishes the order-paid message with Nats-Msg-Id = notification id and marks the row", async () => {
    const relay = workingRelay();
    const app = payments.app({ outboxWritten: () => relay.kick() });
    const orderId = uniqueOrderId();
    const id = `evt_${crypto.randomUUID()}`;
    const response = await app.handle(notificationRequest(paymentSucceeded(orderId, { id })));
    expect(await response.json()).toEqual({ received: true });

    const row = await published(orderId);
    expect(row.message_id).toBe(id);
    const message = await lastOrderPaid();
    expect(message.msgId).toBe(id);
    expect(message.payload).toEqual(row.payload);
    expect(message.payload).toMatchObject({
      notification_id: id,
      order_id: orderId,
      amount: 1999,
      currency: "USD",
    });
    await relay.stop();
  });

  test("W6: the relay's timer publishes rows nobody kicked it for", async () => {
    const app = payments.app();
    const orderId = uniqueOrderId();
    expect((await app.handle(notificationRequest(paymentSucceeded(orderId)))).status).toBe(200);
    expect((await outboxRow(orderId)).published_at).toBeNull();
    const relay = workingRelay(50);
    relay.start();
    await published(orderId);
    await relay.stop();
  });

  test("W6: with NATS down the answer is still 200 and the row waits, unpublished, for a working relay", async () => {
    const downRelay = new OutboxRelay({
      sql: payments.sql,
      schema: "payments",
      subjects: [payments.topology.payments.orderPaid],
      jetstream: () => undefined,
      logger: silent,
    });
    const app = payments.app({ outboxWritten: () => downRelay.kick() });
    const orderId = uniqueOrderId();
    const id = `evt_${crypto.randomUUID()}`;
    const response = await app.handle(notificationRequest(paymentSucceeded(orderId, { id })));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ received: true });
    await downRelay.stop();
    expect(await rowsFor(payments.sql, orderId)).toEqual({ notifications: 1, outbox: 1 });
    expect((await outboxRow(orderId)).published_at).toBeNull();

    const relay = workingRelay();
    relay.kick();
    await published(orderId);
    expect((await lastOrderPaid()).msgId).toBe(id);
    await relay.stop();
  });

  test("W8: 50 concurrent duplicates publish one message, and a row sent twice is kept once by JetStream", async () => {
    const relay = workingRelay();
    const app = payments.app({ outboxWritten: () => relay.kick() });
    const orderId = uniqueOrderId();
    const raw = JSON.stringify(paymentSucceeded(orderId));
    const before = await messagesInStream();
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => app.handle(notificationRequest(raw))),
    );
    expect(responses.every((response) => response.status === 200)).toBe(true);
    await published(orderId);
    await relay.stop();
    expect(await messagesInStream()).toBe(before + 1);

    // As if the relay crashed between JetStream's ack and marking the row.
    await payments.sql`
      update payments.outbox set published_at = null where payload->>'order_id' = ${String(orderId)}`;
    const again = workingRelay();
    again.kick();
    await published(orderId);
    await again.stop();
    expect(await messagesInStream()).toBe(before + 1);
  });
});

describe("database down", () => {
  test("W6: with the database down a notification answers 503 problem, so the provider retries", async () => {
    const deadSql = connectDatabase("postgres://root@127.0.0.1:1/test", { max: 1 });
    const { logger, lines } = collectingLogger();
    const app = payments.app({ sql: deadSql, logger });
    const response = await app.handle(notificationRequest(paymentSucceeded(uniqueOrderId())));
    expect(response.status).toBe(503);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(response.headers.get("retry-after")).toBe("1");
    const problem = await response.json();
    expect(problem).toMatchObject({ status: 503, title: "Service Unavailable" });
    expect(JSON.stringify(problem)).not.toContain("127.0.0.1");
    expect(lines.find((line) => line.msg === "notification")).toMatchObject({
      outcome: "failed",
      reason: "error",
    });
    await deadSql.end();
  });
});

import { describe, expect, test } from "bun:test";
import {
  disputeMessage,
  notificationKey,
  parseDisputeMessage,
  parsePaymentMessage,
  paymentMessage,
} from "@commerce/shared/contract/messages";
import { paymentsForFile } from "@commerce/testing/in-process";
import { uniqueOrderId } from "@commerce/testing/payments-requests";
import { GroupCommit } from "./group-commit";

const payments = await paymentsForFile();

describe("the order-paid message built in SQL", () => {
  test("M1, O8: the outbox payload, with provider and payment_ref, the accept statement writes is exactly the shared schema, with the traceparent as a header", async () => {
    const orderId = uniqueOrderId();
    const id = `evt_${crypto.randomUUID()}`;
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const notification = {
      event: "payment.succeeded",
      order_id: orderId,
      amount: 4980,
      currency: "EUR",
      id,
    };
    await new GroupCommit(payments.sql).store([
      {
        provider: "stripe",
        notification: {
          id,
          event: "payment_intent.succeeded",
          orderId,
          paymentRef: "pi_3MtwBwLkdIwHu7ix28a3tqPa",
          amount: 4980,
          currency: "EUR",
          message: "payment.succeeded",
        },
        rawBody: JSON.stringify(notification),
        sourceIp: "127.0.0.1",
        traceparent,
        messageSubject: payments.topology.payments.orderPaid,
      },
    ]);
    const [row] = await payments.sql<
      { payload: Record<string, unknown>; headers: unknown; stored: string }[]
    >`
      select o.payload, o.headers, n.traceparent as stored
      from payments.outbox o join payments.notifications n on n.key = o.message_id
      where o.message_id = ${`stripe:${id}`}`;
    expect(row.headers).toEqual({ traceparent });
    expect(row.stored).toBe(traceparent);

    expect(parsePaymentMessage(row.payload)).toBeDefined();
    // Every field but `source`, which only what a reconciliation run found carries (B3).
    expect(Object.keys(row.payload).sort()).toEqual(
      Object.keys(paymentMessage.properties)
        .filter((name) => name !== "source")
        .sort(),
    );
    expect(row.payload).toMatchObject({
      notification_id: `stripe:${id}`,
      order_id: orderId,
      amount: 4980,
      currency: "EUR",
      provider: "stripe",
      payment_ref: "pi_3MtwBwLkdIwHu7ix28a3tqPa",
    });
    expect(new Date(row.payload.received_at as string).toISOString()).toBe(
      row.payload.received_at as string,
    );
  });
});

describe("the dispute message built in SQL (L5)", () => {
  test("L5, M1: a dispute that names no order makes the shared dispute schema: M1's fields without order_id, and its stage", async () => {
    const id = `evt_${crypto.randomUUID()}`;
    await new GroupCommit(payments.sql).store([
      {
        provider: "stripe",
        notification: {
          id,
          event: "charge.dispute.created",
          orderId: null,
          paymentRef: "pi_disputed_1",
          amount: 1999,
          currency: "USD",
          message: "payment.disputed",
          stage: "opened",
        },
        rawBody: "{}",
        sourceIp: "127.0.0.1",
        traceparent: null,
        messageSubject: payments.topology.payments.orderDisputed,
      },
    ]);
    const [row] = await payments.sql<{ subject: string; payload: Record<string, unknown> }[]>`
      select subject, payload from payments.outbox where message_id = ${`stripe:${id}`}`;
    expect(row.subject).toBe(payments.topology.payments.orderDisputed);
    expect(parseDisputeMessage(row.payload)).toBeDefined();
    expect(parsePaymentMessage(row.payload)).toBeUndefined();
    expect(Object.keys(row.payload).sort()).toEqual(
      Object.keys(disputeMessage.properties)
        .filter((name) => name !== "order_id" && name !== "source")
        .sort(),
    );
    expect(row.payload).toMatchObject({ stage: "opened", payment_ref: "pi_disputed_1" });
  });
});

describe("notification keys (G5)", () => {
  test("G5: the key PostgreSQL computes for a stored notification is notificationKey's, and no two providers' ids share one", async () => {
    const tag = crypto.randomUUID().slice(0, 8);
    const cases: [string, string][] = [
      ["generic", `evt_${tag}`],
      ["stripe", `evt_${tag}`],
      ["generic", `stripe:evt_${tag}`],
      ["generic", `generic:stripe:evt_${tag}`],
      ["adyen", `adyen:AUTHORISATION:${tag}:true`],
      ["generic", `adyen:AUTHORISATION:${tag}:true`],
      ["stripe", `adyen:${tag}`],
    ];
    await new GroupCommit(payments.sql).store(
      cases.map(([provider, id]) => ({
        provider: provider as "generic",
        notification: {
          id,
          event: "customer.created",
          orderId: null,
          paymentRef: null,
          amount: null,
          currency: null,
          message: undefined,
        },
        rawBody: "{}",
        sourceIp: "127.0.0.1",
        traceparent: null,
        messageSubject: undefined,
      })),
    );
    const rows = await payments.sql<{ provider: string; id: string; key: string }[]>`
      select provider, id, key from payments.notifications where id like ${`%${tag}%`}`;
    expect(rows).toHaveLength(cases.length);
    for (const row of rows) expect(row.key).toBe(notificationKey(row.provider, row.id));
    expect(new Set(rows.map((row) => row.key)).size).toBe(cases.length);
  });
});

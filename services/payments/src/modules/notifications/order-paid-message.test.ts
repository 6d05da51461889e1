import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { parsePaymentMessage, paymentMessage } from "@commerce/shared/messages";
import { type PaymentsHarness, startPayments } from "@commerce/testing/in-process";
import { uniqueOrderId } from "@commerce/testing/payments-requests";
import { storeNotification } from "./service";

let payments: PaymentsHarness;
beforeAll(async () => {
  payments = await startPayments();
});
afterAll(() => payments.close());

describe("the order-paid message built in SQL", () => {
  test("M1: the outbox payload the accept statement writes is exactly the shared schema", async () => {
    const orderId = uniqueOrderId();
    const id = `evt_${crypto.randomUUID()}`;
    const notification = {
      event: "payment.succeeded",
      order_id: orderId,
      amount: 4980,
      currency: "EUR",
      id,
    };
    await storeNotification(payments.sql, {
      id,
      notification,
      rawBody: JSON.stringify(notification),
      sourceIp: "127.0.0.1",
      messageSubject: payments.topology.payments.orderPaid,
    });
    const [row] = await payments.sql<{ payload: Record<string, unknown> }[]>`
      select payload from payments.outbox where message_id = ${id}`;

    expect(parsePaymentMessage(row.payload)).toBeDefined();
    expect(Object.keys(row.payload).sort()).toEqual(Object.keys(paymentMessage.properties).sort());
    expect(row.payload).toMatchObject({
      notification_id: id,
      order_id: orderId,
      amount: 4980,
      currency: "EUR",
    });
    expect(new Date(row.payload.received_at as string).toISOString()).toBe(
      row.payload.received_at as string,
    );
  });
});

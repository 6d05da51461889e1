import { describe, expect, test } from "bun:test";
import { parsePaymentMessage, paymentMessage } from "@commerce/shared/contract/messages";
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
      from payments.outbox o join payments.notifications n on n.id = o.message_id
      where o.message_id = ${id}`;
    expect(row.headers).toEqual({ traceparent });
    expect(row.stored).toBe(traceparent);

    expect(parsePaymentMessage(row.payload)).toBeDefined();
    expect(Object.keys(row.payload).sort()).toEqual(Object.keys(paymentMessage.properties).sort());
    expect(row.payload).toMatchObject({
      notification_id: id,
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

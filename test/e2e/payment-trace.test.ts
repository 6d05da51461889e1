import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { parseTraceparent } from "@commerce/shared/platform/tracing";
import { eventually } from "@commerce/testing/basics";
import { type ReceivedSpan, startOtlpReceiver } from "@commerce/testing/otlp-receiver";
import { type Stack, startStack, succeeded } from "@commerce/testing/processes";

setDefaultTimeout(30_000);

const receiver = startOtlpReceiver();
let plain: Stack;
let exporting: Stack;
beforeAll(async () => {
  [plain, exporting] = await Promise.all([
    startStack({ env: { LOG_LEVEL: "info" } }),
    startStack({ env: { LOG_LEVEL: "info", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } }),
  ]);
});
afterAll(async () => {
  await Promise.all([plain?.stop(), exporting?.stop()]);
  receiver.stop();
});

const traceIdOf = (traceparent: string | null | undefined) =>
  parseTraceparent(traceparent)?.traceId;

/** Pays a fresh order of `stack` with a notification sent in the trace `traceparent` continues. */
async function payInTrace(stack: Stack, traceparent?: string) {
  const order = await stack.newOrder();
  const notification = succeeded(order);
  const answer = await stack.notify(notification, {
    headers: traceparent ? { traceparent } : {},
  });
  expect(answer.status).toBe(200);
  await stack.paid(order.order_id);
  return { order, notification, traceId: traceIdOf(answer.headers.get("traceparent")) };
}

describe("one payment, followed end to end", () => {
  test("T2, O8: the notification id and the webhook's trace_id are in the payments log, the PAYMENTS message, the api's log, the orders.paid message and the timeline", async () => {
    const traceId = crypto.randomUUID().replaceAll("-", "");
    const { order, notification } = await payInTrace(plain, `00-${traceId}-00f067aa0ba902b7-01`);
    const id = notification.id;

    const accepted = plain.payments
      .logLines()
      .find((line) => line.msg === "notification" && line.notification_id === id);
    expect(accepted).toMatchObject({ outcome: "accepted", trace_id: traceId });

    const published = (await plain.storedMessages(plain.topology.payments.stream)).find(
      (message) => message.header.get("Nats-Msg-Id") === id,
    );
    expect(published?.subject).toBe(plain.topology.payments.orderPaid);
    expect(traceIdOf(published?.header.get("traceparent"))).toBe(traceId);

    const applied = await eventually(async () =>
      plain.api
        .logLines()
        .find((line) => line.msg === "payment message applied" && line.notification_id === id),
    );
    expect(applied).toMatchObject({ outcome: "paid", order_id: order.order_id, trace_id: traceId });

    const ordersPaid = await eventually(async () =>
      (await plain.storedMessages(plain.topology.orders.stream)).find(
        (message) =>
          message.subject === plain.topology.orders.event("paid") &&
          message.json<{ order_id: number }>().order_id === order.order_id,
      ),
    );
    expect(ordersPaid.json()).toMatchObject({ notification_id: id, source: "webhook" });
    expect(traceIdOf(ordersPaid.header.get("traceparent"))).toBe(traceId);

    const timeline = await plain.callApi(
      "GET",
      `/api/orders/${order.order_id}/events`,
      plain.customer,
    );
    expect(timeline.status).toBe(200);
    expect(timeline.json.items).toContainEqual(
      expect.objectContaining({ type: "paid", source: "webhook", notification_id: id }),
    );
  });

  test("O8: with OTEL_EXPORTER_OTLP_ENDPOINT set, the spans of one payment (webhook, database, publish, consume, apply, orders.paid publish) reach the collector in one trace", async () => {
    const { order, traceId } = await payInTrace(exporting);
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const paidSubject = exporting.topology.payments.orderPaid;
    const wanted = [
      ["payments", "POST /api/webhooks/payment"],
      ["payments", "store notification"],
      ["payments", `publish ${paidSubject}`],
      ["api", `process ${paidSubject}`],
      ["api", "apply payment message"],
      ["api", `publish ${exporting.topology.orders.event("paid")}`],
    ];
    const inTrace = await eventually(
      async () => {
        const found = receiver.spans.filter((span) => span.traceId === traceId);
        const all = wanted.every(([service, name]) =>
          found.some((span) => span.service === service && span.name === name),
        );
        return all ? found : undefined;
      },
      15_000,
      "the payment's spans at the collector",
    );
    const span = (service: string, name: string) =>
      inTrace.find((s) => s.service === service && s.name === name) as ReceivedSpan;
    const [webhook, store, publish, consume, apply, ordersPaid] = wanted.map(([service, name]) =>
      span(service, name),
    );
    expect(webhook.parentSpanId).toBeUndefined();
    expect(webhook.attributes).toMatchObject({ "http.response.status_code": 200 });
    expect(store.parentSpanId).toBe(webhook.spanId);
    expect(publish.parentSpanId).toBe(webhook.spanId);
    expect(consume.parentSpanId).toBe(publish.spanId);
    expect(consume.attributes).toMatchObject({
      "order.id": order.order_id,
      "payment.outcome": "paid",
    });
    expect(apply.parentSpanId).toBe(consume.spanId);
    expect(ordersPaid.parentSpanId).toBe(apply.spanId);
  });
});

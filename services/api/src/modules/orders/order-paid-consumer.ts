import { describeError, type Logger } from "@commerce/shared/logger";
import { type MessageTopology, parsePaymentOrderPaid } from "@commerce/shared/messages";
import type { Metrics } from "@commerce/shared/metrics";
import { ensureConsumer, type NatsLink } from "@commerce/shared/nats";
import type { ConsumerMessages, JetStreamManager, JsMsg } from "nats";
import type { Database } from "../../db";
import { applyOrderPaid } from "./order-paid";

export type OrderPaidConsumerDeps = {
  db: Database;
  nats: NatsLink;
  topology: MessageTopology;
  logger: Logger;
  metrics: Metrics;
  /** Called after a message paid an order, so the outbox relay publishes `orders.paid` now. */
  outboxWritten: () => void;
};

const decoder = new TextDecoder();

/** Declares the durable consumer `api-order-paid` (idempotent, so on every connect). */
export const ensureOrderPaidConsumer = (
  jsm: JetStreamManager,
  topology: MessageTopology,
  ackWaitMs = 30_000,
) =>
  ensureConsumer(jsm, {
    stream: topology.payments.stream,
    durable: topology.orderPaidConsumer,
    filterSubject: topology.payments.orderPaid,
    ackWaitMs,
  });
const maxBackoffMs = 30_000;

/**
 * The durable pull consumer `api-order-paid` (M1, M2, M4): every replica pulls from the same
 * durable consumer, so each message goes to one of them, and `applyOrderPaid` makes a redelivery
 * harmless. Database failures are nak'd with a growing delay; malformed messages are terminated.
 */
export class OrderPaidConsumer {
  private messages?: ConsumerMessages;
  private running?: Promise<void>;
  private stopped = false;
  private inFlight = Promise.resolve();
  private readonly applied;

  constructor(private readonly deps: OrderPaidConsumerDeps) {
    this.applied = deps.metrics.counter(
      "order_paid_messages_total",
      "payments.order.paid messages by outcome (paid, already_paid, duplicate, unknown_order, mismatch, invalid, failed)",
      ["outcome"],
    );
    deps.metrics.gauge(
      "order_paid_consumer_lag",
      "Messages not yet delivered to api-order-paid",
      () => this.lag(),
    );
  }

  /** Starts pulling (once); safe to call again after every reconnect. */
  start(): void {
    if (this.running || this.stopped) return;
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
  }

  private async loop(): Promise<void> {
    const { nats, topology, logger } = this.deps;
    while (!this.stopped) {
      try {
        const js = nats.jetstream();
        if (!js) throw new Error("nats is not connected");
        const consumer = await js.consumers.get(
          topology.payments.stream,
          topology.orderPaidConsumer,
        );
        this.messages = await consumer.consume({ max_messages: 64 });
        for await (const message of this.messages) {
          this.inFlight = this.handle(message);
          await this.inFlight;
        }
      } catch (error) {
        if (!this.stopped) logger.warn("order-paid consumer restarting", describeError(error));
      }
      if (!this.stopped) await Bun.sleep(1000);
    }
  }

  private async handle(message: JsMsg): Promise<void> {
    const { db, topology, logger, outboxWritten } = this.deps;
    let payload: unknown;
    try {
      payload = JSON.parse(decoder.decode(message.data));
    } catch {
      payload = undefined;
    }
    const orderPaid = parsePaymentOrderPaid(payload);
    if (!orderPaid) {
      this.applied.inc({ outcome: "invalid" });
      logger.error("order-paid message is malformed; dropped", { stream_seq: message.seq });
      message.term();
      return;
    }
    const fields = { notification_id: orderPaid.notification_id, order_id: orderPaid.order_id };
    try {
      const outcome = await applyOrderPaid(db, orderPaid, topology.orders.paid);
      message.ack();
      this.applied.inc({ outcome });
      if (outcome === "paid") outboxWritten();
      if (outcome === "unknown_order" || outcome === "mismatch")
        logger.warn("order-paid message kept for review", {
          ...fields,
          outcome,
          amount: orderPaid.amount,
          currency: orderPaid.currency,
        });
      else logger.info("order-paid message applied", { ...fields, outcome });
    } catch (error) {
      const delay = Math.min(maxBackoffMs, 500 * 2 ** Math.min(message.info.redeliveryCount, 6));
      this.applied.inc({ outcome: "failed" });
      logger.error("order-paid message failed; will be redelivered", {
        ...fields,
        retry_in_ms: delay,
        ...describeError(error),
      });
      message.nak(delay);
    }
  }

  private async lag(): Promise<number> {
    const { nats, topology } = this.deps;
    const jsm = await nats.manager();
    const info = await jsm.consumers.info(topology.payments.stream, topology.orderPaidConsumer);
    return info.num_pending + info.num_ack_pending;
  }

  /** Stops pulling and waits for the message being applied (O7). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.messages?.stop();
    await this.inFlight;
    await this.running;
  }
}

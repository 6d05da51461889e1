import { type MessageTopology, parsePaymentMessage } from "@commerce/shared/contract/messages";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import type { Metrics } from "@commerce/shared/platform/metrics";
import type { NatsLink } from "@commerce/shared/platform/nats";
import {
  inSpan,
  parseTraceparent,
  type Span,
  type Tracer,
  traceFields,
} from "@commerce/shared/platform/tracing";
import type { ConsumerMessages, JsMsg } from "nats";
import type { Database } from "../../db";
import { AtMost, OneAtATimePerKey } from "../../lib/concurrency";
import { applyPaymentMessage, type PaymentOutcome, paymentRefOf } from "./apply";
import { PaymentBatcher } from "./batcher";
import { handleDispute } from "./dispute-consumer";
import { handleRefundOutcome } from "./refund-outcome-consumer";
import { dropMalformed, redeliverLater } from "./settle";
import { kindOf } from "./subscription";

export type PaymentConsumerDeps = {
  db: Database;
  nats: NatsLink;
  topology: MessageTopology;
  logger: Logger;
  metrics: Metrics;
  /** O8: each message is a span continuing the `traceparent` it carries. */
  tracer: Tracer;
  /** Called after a message wrote an order event, so the outbox relay publishes it now. */
  outboxWritten: () => void;
  /** Messages applied through the general path at once (default `defaultConcurrency`). */
  concurrency?: number;
};

const decoder = new TextDecoder();
const pullExpiresMs = 5_000;
/**
 * M5: messages taken in at once (applied, or waiting for their batch or their order's turn). Each
 * holds its place until acked, well within the consumer's 30 s ack wait.
 */
const maxInFlight = 256;
/**
 * M5: messages applied through the general path (a transaction each) at once. Each holds a
 * database connection, so this stays below the pool (10 by default) and leaves some for HTTP.
 */
export const defaultConcurrency = 8;

/**
 * The durable pull consumer `api-payment-events` (M1, M2, M4): every replica pulls from the
 * same durable consumer, so each message goes to one of them, and `applyPaymentMessage` makes a
 * redelivery harmless. Messages are applied many at once (M5) and each is acked after the
 * commit that applied it: full payments of payable orders go through `PaymentBatcher`, one
 * statement for all that arrive together; everything else (and a payment the batch did not
 * apply) through `applyPaymentMessage`, a transaction each, `concurrency` at a time. Messages for
 * the same order wait for each other, so one process applies an order's messages in the order
 * it received them. Database failures are nak'd with a growing delay; malformed messages are
 * terminated; reviews are acked (a person takes them from there). Each message continues the
 * trace of the webhook request that caused it (O8), so its log line carries that `trace_id`.
 */
export class PaymentConsumer {
  private messages?: ConsumerMessages;
  private running?: Promise<void>;
  private stopped = false;
  /** Messages being applied. */
  private readonly inFlight = new Set<Promise<void>>();
  /** An order's messages are applied one after another, in the order received. */
  private readonly perOrder = new OneAtATimePerKey<number>();
  private readonly generalPath: AtMost;
  private readonly batcher: PaymentBatcher;
  private readonly applied;

  constructor(private readonly deps: PaymentConsumerDeps) {
    this.generalPath = new AtMost(deps.concurrency ?? defaultConcurrency);
    this.batcher = new PaymentBatcher(deps.db, deps.topology);
    this.applied = deps.metrics.counter(
      "payment_messages_total",
      "Payment messages by outcome: a move (paid, refunded), payment_failed, duplicate, a review reason, invalid or failed",
      ["outcome"],
    );
    deps.metrics.gauge(
      "payment_consumer_lag",
      "Payment messages not yet applied by api-payment-events",
      () => this.lag(),
    );
    deps.metrics.gauge(
      "payment_message_oldest_unapplied_age_seconds",
      "Age of the oldest payment message not yet applied (0: none waiting)",
      () => this.oldestUnappliedAge(),
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
          topology.paymentEventsConsumer,
        );
        // X1: after losing its NATS node or the consumer's leader the client re-pulls only after
        // missed heartbeats (expires / 2) or a failed info check (retried every `expires`), so
        // 5 s instead of nats.js's 30 s is how long messages wait after a cluster fail-over.
        this.messages = await consumer.consume({
          max_messages: maxInFlight,
          expires: pullExpiresMs,
        });
        for await (const message of this.messages) {
          while (this.inFlight.size >= maxInFlight) await Promise.race(this.inFlight);
          // O7: a message still buffered when the shutdown began is left to JetStream, which
          // hands it out again (to another replica, or to this one after its restart).
          if (this.stopped) {
            message.nak();
            continue;
          }
          const handled = this.handle(message).finally(() => this.inFlight.delete(handled));
          this.inFlight.add(handled);
        }
      } catch (error) {
        if (!this.stopped) logger.warn("payment consumer restarting", describeError(error));
      }
      if (!this.stopped) await Bun.sleep(1000);
    }
  }

  private async handle(message: JsMsg): Promise<void> {
    const span = this.deps.tracer.startSpan(`process ${message.subject}`, {
      parent: parseTraceparent(message.headers?.get("traceparent")),
      kind: "consumer",
    });
    try {
      await this.apply(message, span);
    } catch (error) {
      // X2 (v5): `apply` settles every message it judged; anything else leaves this one to
      // JetStream, which hands it out again after the ack wait.
      this.deps.logger.warn("payment message not handled; JetStream will redeliver it", {
        subject: message.subject,
        ...describeError(error),
      });
    } finally {
      span.end();
    }
  }

  private async apply(message: JsMsg, span: Span): Promise<void> {
    const { db, topology, logger, tracer, outboxWritten } = this.deps;
    const trace = traceFields(span.context);
    let payload: unknown;
    try {
      payload = JSON.parse(decoder.decode(message.data));
    } catch {
      payload = undefined;
    }
    const kind = kindOf(message.subject, topology);
    const context = {
      ...this.deps,
      applied: this.applied,
      perOrder: this.perOrder,
      general: this.generalPath,
    };
    if (kind === "disputed") return handleDispute(context, message, payload, span);
    if (kind === "refund_outcome") return handleRefundOutcome(context, message, payload, span);
    const payment = parsePaymentMessage(payload);
    if (!payment || !kind)
      return dropMalformed({ logger, applied: this.applied }, message, span, trace);
    const fields = {
      ...trace,
      notification_id: payment.notification_id,
      order_id: payment.order_id,
      event: kind,
      provider: payment.provider ?? "generic",
      payment_ref: paymentRefOf(payment),
    };
    if (span.recording)
      span.set({
        "messaging.system": "nats",
        "messaging.operation.type": "process",
        "messaging.destination.name": message.subject,
        "messaging.message.id": payment.notification_id,
        "order.id": payment.order_id,
      });
    try {
      const outcome = await this.perOrder.run(payment.order_id, () =>
        inSpan(
          tracer,
          "apply payment message",
          { parent: span.context, kind: "client", attributes: { "db.system.name": "postgresql" } },
          async ({ context }): Promise<PaymentOutcome> => {
            if (
              kind === "succeeded" &&
              (await this.batcher.pay({ message: payment, trace: context }))
            )
              return "paid";
            return this.generalPath.run(() =>
              applyPaymentMessage(db, topology, kind, payment, context),
            );
          },
        ),
      );
      if (span.recording) span.set({ "payment.outcome": outcome });
      message.ack();
      this.applied.inc({ outcome });
      if (
        outcome === "paid" ||
        outcome === "refunded" ||
        outcome === "payment_failed" ||
        outcome === "refund_confirmed"
      ) {
        outboxWritten();
        logger.info("payment message applied", { ...fields, outcome });
      } else if (outcome === "duplicate")
        logger.info("payment message seen before; nothing to do", fields);
      else if (outcome === "same_payment")
        logger.info("payment message about the payment that paid the order; nothing to do", fields);
      else
        logger.warn("payment message kept for review", {
          ...fields,
          reason: outcome,
          amount: payment.amount,
          currency: payment.currency,
        });
    } catch (error) {
      redeliverLater({ logger, applied: this.applied }, message, span, fields, error);
    }
  }

  private async lag(): Promise<number> {
    const { nats, topology } = this.deps;
    const jsm = await nats.manager();
    const info = await jsm.consumers.info(topology.payments.stream, topology.paymentEventsConsumer);
    return info.num_pending + info.num_ack_pending;
  }

  private async oldestUnappliedAge(): Promise<number> {
    const { nats, topology } = this.deps;
    const jsm = await nats.manager();
    const stream = topology.payments.stream;
    const info = await jsm.consumers.info(stream, topology.paymentEventsConsumer);
    if (info.num_pending + info.num_ack_pending === 0) return 0;
    // Everything up to the ack floor is applied; the next message in the stream is the oldest not.
    const oldest = await jsm.streams.getMessage(stream, { seq: info.ack_floor.stream_seq + 1 });
    return Math.max(0, (Date.now() - oldest.time.getTime()) / 1000);
  }

  /** Stops pulling and waits for the messages being applied, so a shutdown cuts none off midway (O7). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.messages?.stop();
    await this.running;
    // The loop has ended, so nothing joins the set any more; what is in it finishes before the
    // database closes.
    await Promise.all(this.inFlight);
  }
}

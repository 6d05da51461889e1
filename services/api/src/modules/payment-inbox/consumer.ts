import { type MessageTopology, parsePaymentMessage } from "@commerce/shared/contract/messages";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import type { Metrics } from "@commerce/shared/platform/metrics";
import { HeldPull, type NatsLink } from "@commerce/shared/platform/nats";
import {
  inSpan,
  parseTraceparent,
  type Span,
  type Tracer,
  traceFields,
} from "@commerce/shared/platform/tracing";
import type { JsMsg } from "nats";
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
  /**
   * B2: declares the durable consumer again when it is gone (deleted, or its stream re-created);
   * without it the loop would retry a consumer that no longer exists until the next reconnect.
   */
  declare?: () => Promise<void>;
};

const decoder = new TextDecoder();
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
  /** O7 (v5), M5, B2: the fetch/hold/give-back loop, shared with payments' refund requests. */
  private readonly pull: HeldPull;
  /** An order's messages are applied one after another, in the order received. */
  private readonly perOrder = new OneAtATimePerKey<number>();
  private readonly generalPath: AtMost;
  private readonly batcher: PaymentBatcher;
  private readonly applied;

  constructor(private readonly deps: PaymentConsumerDeps) {
    this.generalPath = new AtMost(deps.concurrency ?? defaultConcurrency);
    this.batcher = new PaymentBatcher(deps.db, deps.topology);
    this.pull = new HeldPull({
      nats: deps.nats,
      stream: deps.topology.payments.stream,
      consumer: deps.topology.paymentEventsConsumer,
      logger: deps.logger,
      name: "payment consumer",
      handle: (message) => this.handle(message),
      maxInFlight,
      declare: deps.declare,
    });
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
    this.pull.start();
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

  /**
   * Stops pulling and waits for the messages being applied, so a shutdown cuts none off midway
   * (O7). O7 (v5): what the last fetch still brings is given back once JetStream has ended its
   * pull request, so another replica (or this api after its restart) applies it at once, never
   * after the consumer's ack wait (`HeldPull`).
   */
  async stop(): Promise<void> {
    await this.pull.stop();
  }
}

import { type MessageTopology, parseDisputeMessage } from "@commerce/shared/contract/messages";
import type { Logger } from "@commerce/shared/platform/logger";
import { type Span, traceFields } from "@commerce/shared/platform/tracing";
import type { JsMsg } from "nats";
import type { Database } from "../../db";
import type { AtMost, OneAtATimePerKey } from "../../lib/concurrency";
import { applyDisputeMessage } from "./dispute";
import { dropMalformed, redeliverLater } from "./settle";

/** What the payment consumer lends the dispute path: its deps, counter and concurrency limits. */
export type DisputeContext = {
  db: Database;
  topology: MessageTopology;
  logger: Logger;
  outboxWritten: () => void;
  applied: { inc(labels: { outcome: string }): void };
  perOrder: OneAtATimePerKey<number>;
  general: AtMost;
};

/**
 * L5: a `payments.order.disputed` message, handled as the consumer handles a payment (M2): applied
 * in one transaction, acked after its commit, nak'd with back-off on a failure, terminated when
 * malformed. Money that leaves is never silent: every applied dispute is a `warn` line.
 */
export async function handleDispute(
  context: DisputeContext,
  message: JsMsg,
  payload: unknown,
  span: Span,
): Promise<void> {
  const { db, topology, logger, outboxWritten, applied } = context;
  const trace = traceFields(span.context);
  const dispute = parseDisputeMessage(payload);
  if (!dispute) return dropMalformed(context, message, span, trace);
  const fields = {
    ...trace,
    notification_id: dispute.notification_id,
    event: "disputed",
    stage: dispute.stage,
    provider: dispute.provider,
    payment_ref: dispute.payment_ref,
  };
  try {
    const { outcome, orderId } = await context.perOrder.run(dispute.order_id ?? 0, () =>
      context.general.run(() => applyDisputeMessage(db, topology, dispute, span.context)),
    );
    message.ack();
    applied.inc({ outcome });
    const line = { ...fields, order_id: orderId ?? null, outcome };
    const money = { amount: dispute.amount, currency: dispute.currency };
    if (outcome === "duplicate") logger.info("payment message seen before; nothing to do", line);
    else if (outcome === "no_order")
      logger.error("dispute of a payment that paid no order here; nothing to attach it to", {
        ...line,
        ...money,
      });
    else {
      outboxWritten();
      logger.warn("payment disputed", { ...line, ...money });
    }
  } catch (error) {
    redeliverLater(context, message, span, fields, error);
  }
}

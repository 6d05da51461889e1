import { parseRefundOutcome } from "@commerce/shared/contract/messages";
import { type Span, traceFields } from "@commerce/shared/platform/tracing";
import type { JsMsg } from "nats";
import type { DisputeContext } from "./dispute-consumer";
import { applyRefundOutcome } from "./refund-outcome";
import { dropMalformed, redeliverLater } from "./settle";

/**
 * F2–F4: a `payments.order.refund_outcome` message, handled as the consumer handles a payment
 * (M2): applied in one transaction, acked after its commit, nak'd with back-off on a failure,
 * terminated when malformed. A refund that failed or whose outcome is unknown is a `warn` line.
 */
export async function handleRefundOutcome(
  context: DisputeContext,
  message: JsMsg,
  payload: unknown,
  span: Span,
): Promise<void> {
  const { db, topology, logger, outboxWritten, applied } = context;
  const trace = traceFields(span.context);
  const outcome = parseRefundOutcome(payload);
  if (!outcome) return dropMalformed(context, message, span, trace);
  const fields = {
    ...trace,
    order_id: outcome.order_id,
    refund_id: outcome.refund_id,
    status: outcome.status,
    provider: outcome.provider,
    provider_refund_id: outcome.provider_refund_id ?? null,
  };
  try {
    const result = await context.perOrder.run(outcome.order_id, () =>
      context.general.run(() => applyRefundOutcome(db, topology, outcome, span.context)),
    );
    message.ack();
    applied.inc({ outcome: result });
    if (result === "duplicate") logger.info("refund outcome seen before; nothing to do", fields);
    else if (result === "unknown_refund")
      logger.error("refund outcome of a refund this api never recorded", fields);
    else if (result === "refund_failed" || result === "refund_unknown") {
      outboxWritten();
      logger.warn("refund not made", {
        ...fields,
        outcome: result,
        failure_reason: outcome.failure_reason ?? null,
      });
    } else {
      outboxWritten();
      logger.info("refund outcome applied", { ...fields, outcome: result });
    }
  } catch (error) {
    redeliverLater(context, message, span, fields, error);
  }
}

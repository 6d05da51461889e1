import { describeError, type Logger } from "@commerce/shared/platform/logger";
import type { Span, traceFields } from "@commerce/shared/platform/tracing";
import type { JsMsg } from "nats";
import { retryDelayMs } from "./backoff";

/** What a payment or dispute message is settled with: the consumer's log and its counter. */
type Settling = { logger: Logger; applied: { inc(labels: { outcome: string }): void } };

/**
 * M2: a message that is not a payment or dispute message is counted as `invalid`, logged, and
 * terminated, so JetStream never hands it out again.
 */
export function dropMalformed(
  context: Settling,
  message: JsMsg,
  span: Span,
  trace: ReturnType<typeof traceFields>,
): void {
  context.applied.inc({ outcome: "invalid" });
  context.logger.error("payment message is malformed; dropped", {
    ...trace,
    subject: message.subject,
    stream_seq: message.seq,
  });
  span.fail();
  message.term();
}

/**
 * M2: a message whose applying failed (the database, mostly) is counted as `failed`, logged with
 * its `fields`, and nak'd with a delay that grows with each redelivery.
 */
export function redeliverLater(
  context: Settling,
  message: JsMsg,
  span: Span,
  fields: Record<string, unknown>,
  error: unknown,
): void {
  const delay = retryDelayMs(message.info.redeliveryCount);
  context.applied.inc({ outcome: "failed" });
  span.fail(error);
  context.logger.error("payment message failed; will be redelivered", {
    ...fields,
    retry_in_ms: delay,
    ...describeError(error),
  });
  message.nak(delay);
}

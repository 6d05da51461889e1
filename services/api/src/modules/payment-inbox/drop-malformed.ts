import type { Logger } from "@commerce/shared/platform/logger";
import type { Span, traceFields } from "@commerce/shared/platform/tracing";
import type { JsMsg } from "nats";

/**
 * M2: a message that is not a payment or dispute message is counted as `invalid`, logged, and
 * terminated, so JetStream never hands it out again.
 */
export function dropMalformed(
  context: { logger: Logger; applied: { inc(labels: { outcome: string }): void } },
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

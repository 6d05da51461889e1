import type { MessageTopology } from "@commerce/shared/contract/messages";
import { ensureConsumer } from "@commerce/shared/platform/nats";
import type { JetStreamManager } from "nats";
import type { PaymentKind } from "./apply";

/** Declares the durable consumer of every payment event (idempotent, so on every connect). */
export async function ensurePaymentConsumer(
  jsm: JetStreamManager,
  topology: MessageTopology,
  ackWaitMs = 30_000,
) {
  await waitForStream(jsm, topology.payments.stream);
  await ensureConsumer(jsm, {
    stream: topology.payments.stream,
    durable: topology.paymentEventsConsumer,
    filterSubject: topology.payments.order,
    ackWaitMs,
  });
}

/**
 * N1: `PAYMENTS` is the payments service's to create; the api may only read its information.
 * An api started first waits here (up to `waitMs`, then the NATS link's setup retry takes over).
 */
async function waitForStream(jsm: JetStreamManager, stream: string, waitMs = 20_000) {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      await jsm.streams.info(stream);
      return;
    } catch (error) {
      const missing =
        /not found/i.test(String(error)) || (error as { code?: string }).code === "404";
      if (!missing || Date.now() > deadline) throw error;
      await Bun.sleep(250);
    }
  }
}

/** The payment event a subject carries (M1, L5, F3); undefined for a subject this api does not know. */
export function kindOf(
  subject: string,
  topology: MessageTopology,
): PaymentKind | "disputed" | "refund_outcome" | undefined {
  const { orderPaid, orderRefunded, orderFailed, orderDisputed, refundOutcome } = topology.payments;
  return new Map<string, PaymentKind | "disputed" | "refund_outcome">([
    [orderPaid, "succeeded"],
    [orderRefunded, "refunded"],
    [orderFailed, "failed"],
    [orderDisputed, "disputed"],
    [refundOutcome, "refund_outcome"],
  ]).get(subject);
}

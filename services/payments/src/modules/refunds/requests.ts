import { type MessageTopology, parseRefundRequest } from "@commerce/shared/contract/messages";
import type { Sql } from "@commerce/shared/platform/database";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import { ensureConsumer, HeldPull, type NatsLink } from "@commerce/shared/platform/nats";
import type { JetStreamManager, JsMsg } from "nats";
import { recordRequest } from "./ledger";

/** Requests taken in at once; each is one short insert. */
const maxInFlight = 16;

/**
 * F2, N1: declares the durable consumer of `orders.refund_requested` on the api's `ORDERS` stream
 * (the api creates it; payments only reads its information and waits for it).
 */
export async function ensureRefundRequestConsumer(
  jsm: JetStreamManager,
  topology: MessageTopology,
  waitMs = 20_000,
) {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      await jsm.streams.info(topology.orders.stream);
      break;
    } catch (error) {
      const missing =
        /not found/i.test(String(error)) || (error as { code?: string }).code === "404";
      if (!missing || Date.now() > deadline) throw error;
      await Bun.sleep(250);
    }
  }
  await ensureConsumer(jsm, {
    stream: topology.orders.stream,
    durable: topology.refundRequestsConsumer,
    filterSubject: topology.orders.event("refund_requested"),
    ackWaitMs: 30_000,
  });
}

/**
 * F2: the idempotent consumer (microservices.io) of `orders.refund_requested`: each message is
 * recorded as a refund row (once per refund id) and acked after the commit; the refund worker is
 * kicked. A malformed message is terminated; a failed insert is nak'd and comes back. O7 (v5): it
 * reads through `HeldPull`, as the api's payment consumer does, so a payments restart gives back
 * what it held at once instead of leaving it to the consumer's 30 s ack wait.
 */
export class RefundRequests {
  private readonly pull: HeldPull;

  constructor(
    private readonly deps: {
      sql: Sql;
      nats: NatsLink;
      topology: MessageTopology;
      logger: Logger;
      recorded: () => void;
    },
  ) {
    const { nats, topology, logger } = deps;
    this.pull = new HeldPull({
      nats,
      stream: topology.orders.stream,
      consumer: topology.refundRequestsConsumer,
      logger,
      name: "refund request consumer",
      handle: (message) => this.record(message),
      maxInFlight,
      // Declared here, not in the NATS link's setup: payments is ready and takes notifications
      // while the api (and its stream) is not there yet.
      declare: async () => ensureRefundRequestConsumer(await nats.manager(), topology),
    });
  }

  start(): void {
    this.pull.start();
  }

  private async record(message: JsMsg): Promise<void> {
    const { sql, logger } = this.deps;
    let payload: unknown;
    try {
      payload = message.json();
    } catch {
      payload = undefined;
    }
    const request = parseRefundRequest(payload);
    if (!request) {
      logger.error("refund request is malformed; dropped", {
        subject: message.subject,
        stream_seq: message.seq,
      });
      message.term();
      return;
    }
    try {
      const fresh = await recordRequest(sql, request, message.subject);
      message.ack();
      logger.info(fresh ? "refund request recorded" : "refund request seen before", {
        refund_id: request.refund_id,
        order_id: request.order_id,
        provider: request.provider,
        amount: request.amount,
      });
      if (fresh) this.deps.recorded();
    } catch (error) {
      logger.error("refund request not recorded; will be redelivered", {
        refund_id: request.refund_id,
        ...describeError(error),
      });
      message.nak(1000);
    }
  }

  async stop(): Promise<void> {
    await this.pull.stop();
  }
}

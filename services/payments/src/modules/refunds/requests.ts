import { type MessageTopology, parseRefundRequest } from "@commerce/shared/contract/messages";
import type { Sql } from "@commerce/shared/platform/database";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import { ensureConsumer, type NatsLink } from "@commerce/shared/platform/nats";
import type { ConsumerMessages, JetStreamManager, JsMsg } from "nats";
import { recordRequest } from "./ledger";

/** How long a pull waits; after a NATS node is lost the client pulls again within this. */
const pullExpiresMs = 5000;

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
 * kicked. A malformed message is terminated; a failed insert is nak'd and comes back.
 */
export class RefundRequests {
  private messages?: ConsumerMessages;
  private running?: Promise<void>;
  private stopped = false;

  constructor(
    private readonly deps: {
      sql: Sql;
      nats: NatsLink;
      topology: MessageTopology;
      logger: Logger;
      recorded: () => void;
    },
  ) {}

  start(): void {
    this.running ??= this.loop();
  }

  private async loop(): Promise<void> {
    const { nats, topology, logger } = this.deps;
    while (!this.stopped) {
      try {
        const js = nats.jetstream();
        if (!js) throw new Error("nats is not connected");
        // Here, not in the NATS link's setup: payments is ready and takes notifications while the
        // api (and its stream) is not there yet.
        await ensureRefundRequestConsumer(await nats.manager(), topology);
        const consumer = await js.consumers.get(
          topology.orders.stream,
          topology.refundRequestsConsumer,
        );
        this.messages = await consumer.consume({ max_messages: 64, expires: pullExpiresMs });
        for await (const message of this.messages) {
          if (this.stopped) {
            message.nak();
            continue;
          }
          await this.record(message);
        }
      } catch (error) {
        if (!this.stopped) logger.warn("refund request consumer restarting", describeError(error));
      }
      if (!this.stopped) await Bun.sleep(1000);
    }
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
    this.stopped = true;
    this.messages?.stop();
    await this.running;
  }
}

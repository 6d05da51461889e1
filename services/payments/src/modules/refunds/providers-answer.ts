import type { MessageTopology } from "@commerce/shared/contract/messages";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import type { NatsConnection } from "nats";

const encoder = new TextEncoder();

/**
 * F1: answers the api's question on `refundProvidersQuery`: the providers this service refunds
 * through (those whose API key it has). Replicas share the subject as one queue group, so one
 * answers; they are configured alike.
 */
export class RefundProvidersAnswerer {
  private connection?: NatsConnection;
  private readonly answer: Uint8Array;

  constructor(
    private readonly deps: { topology: MessageTopology; logger: Logger; providers: string[] },
  ) {
    this.answer = encoder.encode(JSON.stringify({ providers: deps.providers }));
  }

  /** Subscribes on `nc` (once per connection; NATS keeps it across reconnects). */
  listen(nc: NatsConnection | undefined): void {
    if (!nc || nc === this.connection) return;
    this.connection = nc;
    nc.subscribe(this.deps.topology.refundProvidersQuery, {
      queue: "payments",
      callback: (error, message) => {
        if (error) {
          this.deps.logger.warn("refund-providers question failed", describeError(error));
          return;
        }
        message.respond(this.answer);
      },
    });
  }
}

import type { MessageTopology } from "@commerce/shared/contract/messages";
import { parseRefundProvidersAnswer } from "@commerce/shared/contract/refund-providers";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import type { NatsLink } from "@commerce/shared/platform/nats";

/** How long an answer is trusted: a payments deployment with a new key is seen within this. */
const keepAnswerMs = 30_000;
/** How long a refund request waits for payments to answer before it goes on without knowing. */
const askTimeoutMs = 2_000;

/**
 * F1: which providers the payments service refunds through, asked over NATS and kept for a while.
 * Undefined when payments has not answered yet (it is away, or NATS is): the request is then
 * recorded as before, and payments fails it with the reason if it cannot make it (F3). Concurrent
 * requests share one question.
 */
export class RefundProviders {
  private known?: { providers: Set<string>; until: number };
  private asking?: Promise<Set<string> | undefined>;

  constructor(
    private readonly deps: { nats: NatsLink; topology: MessageTopology; logger: Logger },
  ) {}

  async configured(): Promise<Set<string> | undefined> {
    if (this.known && Date.now() < this.known.until) return this.known.providers;
    this.asking ??= this.ask().finally(() => {
      this.asking = undefined;
    });
    return this.asking;
  }

  private async ask(): Promise<Set<string> | undefined> {
    const nc = this.deps.nats.nc;
    if (!nc) return this.known?.providers;
    try {
      const reply = await nc.request(this.deps.topology.refundProvidersQuery, undefined, {
        timeout: askTimeoutMs,
      });
      const providers = parseRefundProvidersAnswer(reply.data);
      if (!providers) {
        this.deps.logger.warn("refund-providers answer malformed; refunds are recorded unchecked");
        return this.known?.providers;
      }
      this.known = { providers: new Set(providers), until: Date.now() + keepAnswerMs };
      return this.known.providers;
    } catch (error) {
      // No payments replica listening, or none answered in time: the last answer, if any.
      this.deps.logger.warn(
        "payments did not say which providers it refunds through",
        describeError(error),
      );
      return this.known?.providers;
    }
  }
}

import {
  type AppliedAnswer,
  parseAppliedQuestion,
} from "@commerce/shared/contract/applied-notifications";
import type { MessageTopology } from "@commerce/shared/contract/messages";
import type { Sql } from "@commerce/shared/platform/database";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import type { NatsLink } from "@commerce/shared/platform/nats";
import type { Msg, NatsConnection, Subscription } from "nats";

const encoder = new TextEncoder();
/** Deleted messages right after the consumer's ack floor skipped before giving up on a time. */
const maxSkipped = 20;

/**
 * B2: the stream time of the oldest payment message this api's consumer has not applied, or
 * null when none waits. A message published after it may be in the backlog rather than lost.
 */
export async function pendingSince(
  nats: NatsLink,
  topology: MessageTopology,
): Promise<string | null> {
  const jsm = await nats.manager();
  const stream = topology.payments.stream;
  const info = await jsm.consumers.info(stream, topology.paymentEventsConsumer);
  if (info.num_pending + info.num_ack_pending === 0) return null;
  // Everything up to the ack floor is applied; the next message still in the stream is the
  // oldest not (a deleted one, the very gap this looks for, is skipped).
  const floor = info.ack_floor.stream_seq;
  for (let seq = floor + 1; seq <= floor + maxSkipped; seq++) {
    const message = await jsm.streams.getMessage(stream, { seq }).catch(() => undefined);
    if (message) return message.time.toISOString();
  }
  return new Date().toISOString();
}

/** B2: of `ids`, those this api has recorded as processed (M2), in any outcome. */
export async function appliedOf(sql: Sql, ids: string[]): Promise<string[]> {
  const rows = await sql<{ notification_id: string }[]>`
    select notification_id from api.processed_notifications where notification_id = any(${ids})`;
  return rows.map((row) => row.notification_id);
}

/**
 * B2: answers payments' anti-entropy question on `appliedQuery`: which of these published
 * notification ids has the inbox applied? One primary-key lookup per id, so a page costs the
 * same whatever the history. Replicas share the subject as one queue group, so one answers.
 */
export class AppliedAnswerer {
  private subscription?: Subscription;
  private connection?: NatsConnection;

  constructor(
    private readonly deps: {
      sql: Sql;
      topology: MessageTopology;
      logger: Logger;
      /** The consumer's backlog, for `pending_since`; without it the answer has none. */
      nats?: NatsLink;
    },
  ) {}

  /** Subscribes on `nc` (once per connection; NATS keeps it across reconnects). */
  listen(nc: NatsConnection | undefined): void {
    if (!nc || nc === this.connection) return;
    this.connection = nc;
    this.subscription = nc.subscribe(this.deps.topology.appliedQuery, {
      queue: "api",
      callback: (error, message) => {
        if (error) {
          this.deps.logger.warn("applied-notifications question failed", describeError(error));
          return;
        }
        void this.answer(message);
      },
    });
  }

  private async answer(message: Msg): Promise<void> {
    const question = parseAppliedQuestion(message.data);
    let answer: AppliedAnswer;
    if (!question) answer = { error: "malformed question" };
    else {
      try {
        const { nats, topology } = this.deps;
        // Read before the applied ids: a message applied in between is then in both, never neither.
        const since = nats ? await pendingSince(nats, topology) : undefined;
        answer = { applied: await appliedOf(this.deps.sql, question.ids), pending_since: since };
      } catch (error) {
        this.deps.logger.warn("applied-notifications question not answered", describeError(error));
        answer = { error: "the database or the consumer's state could not be read" };
      }
    }
    message.respond(encoder.encode(JSON.stringify(answer)));
  }

  stop(): void {
    this.subscription?.unsubscribe();
  }
}

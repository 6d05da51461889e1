import {
  type AppliedAnswer,
  parseAppliedQuestion,
} from "@commerce/shared/contract/applied-notifications";
import type { MessageTopology } from "@commerce/shared/contract/messages";
import type { Sql } from "@commerce/shared/platform/database";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import type { Msg, NatsConnection, Subscription } from "nats";

const encoder = new TextEncoder();

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

  constructor(private readonly deps: { sql: Sql; topology: MessageTopology; logger: Logger }) {}

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
        answer = { applied: await appliedOf(this.deps.sql, question.ids) };
      } catch (error) {
        this.deps.logger.warn("applied-notifications question not answered", describeError(error));
        answer = { error: "database unavailable" };
      }
    }
    message.respond(encoder.encode(JSON.stringify(answer)));
  }

  stop(): void {
    this.subscription?.unsubscribe();
  }
}

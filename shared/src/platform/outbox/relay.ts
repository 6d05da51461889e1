import { type JetStreamClient, headers as natsHeaders } from "nats";
import type { Sql } from "../database";
import { FallbackPoll } from "../fallback-poll";
import { describeError, type Logger } from "../logger";
import type { Metrics } from "../metrics";
import { formatTraceparent, idTracer, parseTraceparent, type Tracer } from "../tracing";

type OutboxRow = {
  id: number;
  subject: string;
  message_id: string;
  payload: unknown;
  headers: Record<string, string> | null;
};

export type OutboxRelayOptions = {
  sql: Sql;
  /** The Postgres schema of the service's own outbox table: `api` or `payments`. */
  schema: string;
  /** The subjects this relay publishes; rows of other stacks sharing the table (NATS_PREFIX) are theirs. */
  subjects: string[];
  jetstream: () => JetStreamClient | undefined;
  logger: Logger;
  /** Where to report the backlog (`outbox_backlog`). */
  metrics?: Metrics;
  /** O8: each publish is a span continuing the row's `traceparent` (default: ids only). */
  tracer?: Tracer;
  intervalMs?: number;
  /** Issue 38: the longest wait of the fallback poll while it finds nothing (8 × intervalMs). */
  idleIntervalMs?: number;
  batchSize?: number;
};

const encoder = new TextEncoder();

/** N10: publications failed for a reason that will not change, before a row is set aside. */
export const deadAfterAttempts = 3;

/**
 * N10: the code of a publication failure that trying again cannot cure: the message itself is
 * malformed (a header with CR LF, a bad subject, too large) or NATS refuses its subject. Undefined
 * for everything that passes (NATS away, a timeout, no stream yet): those rows wait, never dead.
 */
export function permanentFailure(error: unknown): string | undefined {
  const code = (error as { code?: unknown })?.code;
  const permanent = [
    "BAD_HEADER",
    "BAD_SUBJECT",
    "BAD_PAYLOAD",
    "MAX_PAYLOAD_EXCEEDED",
    "PERMISSIONS_VIOLATION",
  ];
  if (typeof code === "string" && permanent.includes(code)) return code;
  // nats.js checks a header's value with a message of its own and no code.
  if (error instanceof Error && /invalid header value|header name/i.test(error.message))
    return "BAD_HEADER";
  return undefined;
}

/** N10: an outbox row set aside, as an operator lists it. */
export type DeadOutboxRow = {
  id: number;
  subject: string;
  message_id: string;
  attempts: number;
  last_error: string | null;
  created_at: string;
  dead_at: string;
};

/**
 * The transactional outbox relay (microservices.io): publishes unpublished outbox rows to
 * JetStream, right after a commit (`kick`) and on a timer for anything left over, and marks a row
 * published only after JetStream acked it. The row's message id lets JetStream drop the copy a
 * crash between ack and mark would send again. Rows are locked with SKIP LOCKED, so replicas
 * share the work. A row's headers go with its message; its `traceparent` (O8) is continued by
 * the publish's own span, whose context is what the message carries.
 */
export class OutboxRelay {
  private readonly poll: FallbackPoll;
  /** Drains running; a second one takes the rows written while the first waits for acks. */
  private readonly draining = new Set<Promise<void>>();
  private readonly maxDrains = 2;
  private again = false;
  private stopped = false;
  private readonly intervalMs: number;
  private readonly batchSize: number;
  private readonly tracer: Tracer;
  private readonly deadRows?: ReturnType<Metrics["counter"]>;

  constructor(private readonly options: OutboxRelayOptions) {
    this.intervalMs = options.intervalMs ?? 1000;
    // W6: the timer is for what is left over; right after a commit the writer kicks the relay.
    this.poll = new FallbackPoll(
      () => this.kick(),
      this.intervalMs,
      options.idleIntervalMs ?? 8 * this.intervalMs,
    );
    this.batchSize = options.batchSize ?? 100;
    this.tracer = options.tracer ?? idTracer;
    options.metrics?.gauge("outbox_backlog", "Outbox rows not yet published to JetStream", () =>
      this.backlog(),
    );
    options.metrics?.gauge(
      "outbox_dead",
      "Outbox rows set aside: their publication failed for a reason that will not change",
      () => this.deadCount(),
    );
    this.deadRows = options.metrics?.counter(
      "outbox_dead_total",
      "Outbox rows set aside since the start, by the failure's code",
      ["code"],
    );
  }

  start(): void {
    this.poll.start();
    this.kick();
  }

  /**
   * Publish now (M5): a second drain starts while the first waits for JetStream's acks, so rows
   * committed meanwhile do not wait for that batch; a call while both run makes the relay look
   * again when one is done.
   */
  kick(): void {
    if (this.stopped) return;
    if (this.draining.size >= this.maxDrains) {
      this.again = true;
      return;
    }
    const drain: Promise<void> = this.drain().finally(() => {
      this.draining.delete(drain);
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
    this.draining.add(drain);
  }

  /** Stops the timer and waits for the batches in flight (O7). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.poll.stop();
    await Promise.all(this.draining);
  }

  async backlog(): Promise<number> {
    const [row] = await this.options.sql`
      select count(*)::int as n from ${this.options.sql(this.options.schema)}.outbox
      where published_at is null and dead_at is null and subject = any(${this.options.subjects})`;
    return row.n;
  }

  async deadCount(): Promise<number> {
    const [row] = await this.options.sql`
      select count(*)::int as n from ${this.options.sql(this.options.schema)}.outbox
      where published_at is null and dead_at is not null and subject = any(${this.options.subjects})`;
    return row.n;
  }

  /** N10: the rows set aside, newest first (at most `limit`), for the operator listing. */
  async deadList(limit = 100): Promise<DeadOutboxRow[]> {
    const { sql, schema, subjects } = this.options;
    return sql<DeadOutboxRow[]>`
      select id::int as id, subject, message_id, attempts, last_error,
        to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
        to_char(dead_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as dead_at
      from ${sql(schema)}.outbox
      where published_at is null and dead_at is not null and subject = any(${subjects})
      order by dead_at desc, id desc limit ${limit}`;
  }

  private async drain(): Promise<void> {
    try {
      while (!this.stopped) {
        const js = this.options.jetstream();
        // NATS away: rows may be waiting, so the fallback stays at its quickest until it is back.
        if (!js) return this.poll.busy();
        const { count, failure } = await this.publishBatch(js);
        if (count > 0 || failure) this.poll.busy();
        if (failure) throw failure;
        if (count < this.batchSize) return;
      }
    } catch (error) {
      this.options.logger.warn("outbox relay will retry", describeError(error));
    }
  }

  /** Publishes one locked batch; rows JetStream acked are marked even when others failed. */
  private publishBatch(js: JetStreamClient): Promise<{ count: number; failure?: unknown }> {
    const { sql, schema, subjects } = this.options;
    return sql.begin(async (tx) => {
      // Marking rows published need not wait for the disk: if PostgreSQL loses the mark in a
      // crash, the relay publishes the row again and JetStream drops it by its message id (and
      // the consumers are idempotent besides). The row itself was committed durably.
      await tx`set local synchronous_commit = off`;
      const rows = await tx<OutboxRow[]>`
        select id, subject, message_id, payload, headers from ${tx(schema)}.outbox
        where published_at is null and dead_at is null and subject = any(${subjects})
        order by id limit ${this.batchSize}
        for update skip locked`;
      if (rows.length === 0) return { count: 0 };
      const results = await Promise.allSettled(rows.map((row) => this.publish(js, row)));
      rows.forEach((row, i) => {
        const result = results[i];
        // Expected after a crash between ack and mark; otherwise another writer used this id.
        if (result.status === "fulfilled" && result.value.duplicate)
          this.options.logger.warn(
            "outbox message was a duplicate; JetStream kept the earlier one",
            {
              subject: row.subject,
              message_id: row.message_id,
            },
          );
      });
      const acked = rows.filter((_, i) => results[i].status === "fulfilled").map((row) => row.id);
      if (acked.length)
        await tx`update ${tx(schema)}.outbox set published_at = now() where id in ${tx(acked)}`;
      // N10: a failure that will not change counts against its row; after a few it is set aside
      // and the relay goes on without it. Any other failure (NATS away) leaves the row waiting.
      let failure: unknown;
      for (const [i, row] of rows.entries()) {
        const result = results[i];
        if (result.status === "fulfilled") continue;
        const code = permanentFailure(result.reason);
        if (code === undefined) {
          failure ??= result.reason;
          continue;
        }
        const [marked] = await tx<{ dead: boolean }[]>`
          update ${tx(schema)}.outbox set attempts = attempts + 1, last_error = ${code},
            dead_at = case when attempts + 1 >= ${deadAfterAttempts} then now() end
          where id = ${row.id} returning dead_at is not null as dead`;
        if (marked?.dead) {
          this.deadRows?.inc({ code });
          this.options.logger.error("outbox row set aside: its publication cannot succeed", {
            outbox_id: row.id,
            subject: row.subject,
            message_id: row.message_id,
            code,
          });
        } else failure ??= result.reason;
      }
      return { count: rows.length, failure };
    });
  }

  /** One message with the row's id and headers, in a producer span of the row's trace (O8). */
  private async publish(js: JetStreamClient, row: OutboxRow) {
    const span = this.tracer.startSpan(`publish ${row.subject}`, {
      parent: parseTraceparent(row.headers?.traceparent),
      kind: "producer",
    });
    if (span.recording)
      span.set({
        "messaging.system": "nats",
        "messaging.operation.type": "send",
        "messaging.destination.name": row.subject,
        "messaging.message.id": row.message_id,
      });
    const headers = natsHeaders();
    for (const [name, value] of Object.entries(row.headers ?? {})) headers.set(name, value);
    headers.set("traceparent", formatTraceparent(span.context));
    try {
      return await js.publish(row.subject, encoder.encode(JSON.stringify(row.payload)), {
        msgID: row.message_id,
        timeout: 5000,
        headers,
      });
    } catch (error) {
      span.fail(error);
      throw error;
    } finally {
      span.end();
    }
  }
}

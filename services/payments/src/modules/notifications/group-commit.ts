import { type NotificationSource, notificationKey } from "@commerce/shared/contract/messages";
import type { Sql } from "@commerce/shared/platform/database";
import { UnavailableError } from "@commerce/shared/platform/errors";
import { GroupCommitQueue } from "@commerce/shared/platform/group-commit";
import { messagePayload } from "../../lib/outbox-message";
import type { ParsedNotification, PaymentProvider } from "../providers/provider";

export type StoreInput = {
  provider: PaymentProvider["name"];
  notification: ParsedNotification;
  rawBody: string;
  sourceIp: string;
  /** O8: the trace context of the request that delivered it, sent on with its message. */
  traceparent: string | null;
  /** Where this notification's message goes; undefined for one that makes none (G2). */
  messageSubject: string | undefined;
  /** B1, B3: `reconciliation` for what a reconciliation run found; a webhook's by default. */
  source?: NotificationSource;
};

/** What one request's notifications came to (W5, W8, Y3). */
export type StoreResult = {
  /** None of the request's notifications was new. */
  duplicate: boolean;
  /** At least one of them wrote an outbox row. */
  outboxWritten: boolean;
  /** Per notification, in the request's order: whether it was stored now. */
  stored: boolean[];
};

export type GroupCommitOptions = {
  /** Called once after a commit that wrote outbox rows, so the relay publishes now (W6). */
  outboxWritten?: () => void;
  /** Group statements running at once; what arrives meanwhile waits for the next group. */
  statements?: number;
  /** Notifications in one group statement at most. */
  maxNotifications?: number;
  /** X2: a request not stored within this many ms is answered 503 (default 1500). */
  answerWithinMs?: number;
  /** X2: a statement still running after this many ms no longer holds its slot (default 5000). */
  abandonAfterMs?: number;
};

/**
 * X2: the database did not answer in time (no primary during a failover, every host down): the
 * provider is told 503 at once and sends again, rather than waiting for the promotion. The
 * statement may still commit later; the provider's next attempt is then a duplicate (W5).
 */
export class StoreTimeoutError extends UnavailableError {
  constructor() {
    super("The database did not answer in time; retry");
  }
}

/**
 * W5, W8, Y3, M5: group commit of the intake (`GroupCommitQueue`). A request's notifications join
 * the group being gathered; the group is stored by one statement (one transaction): every
 * notification in one multi-row insert and every outbox row in another, `on conflict do nothing
 * returning` telling a new notification from a repeat. Each request is answered only after its
 * group committed: never before its notification and outbox row are durable (W5).
 *
 * A repeat inside one group (the same id twice, from two requests or in one Adyen batch) is
 * stored once: its first occurrence goes to the statement, the others are duplicates of it.
 *
 * If the group's statement fails for anything but a lost connection, each request is stored again
 * alone (one statement each, so an Adyen batch is still all or none, Y3): a request that cannot be
 * stored fails alone and the others of its group are answered as if they had come alone.
 */
export class GroupCommit {
  private readonly queue: GroupCommitQueue<StoreInput[], StoreResult>;

  constructor(
    private readonly sql: Sql,
    private readonly options: GroupCommitOptions = {},
  ) {
    this.queue = new GroupCommitQueue((group) => this.storeGroup(group), {
      concurrency: options.statements ?? 2,
      maxBatch: options.maxNotifications ?? 256,
      sizeOf: (inputs) => inputs.length,
      isolateFailures: true,
      answerWithinMs: options.answerWithinMs ?? 1500,
      timeout: () => new StoreTimeoutError(),
      abandonAfterMs: options.abandonAfterMs ?? 5000,
    });
  }

  /**
   * Stores one request's notifications with its group; resolves after the commit. Rejects with
   * `StoreTimeoutError` after `answerWithinMs` (X2: never held open while there is no primary);
   * a request still waiting for its group then leaves it, so it is not stored behind its answer.
   */
  store(inputs: StoreInput[]): Promise<StoreResult> {
    return this.queue.add(inputs);
  }

  /** One statement for the group; the results per request, in the group's order. */
  private async storeGroup(group: StoreInput[][]): Promise<StoreResult[]> {
    const rows: StoreInput[] = [];
    /** Per request, per notification: its row in the statement, or -1 for a repeat in the group. */
    const positions: number[][] = [];
    const seen = new Set<string>();
    // G5: a notification is its provider's and its id; the key spells both.
    const keyOf = (input: StoreInput) => notificationKey(input.provider, input.notification.id);
    for (const inputs of group) {
      positions.push(
        inputs.map((input) => {
          const key = keyOf(input);
          if (seen.has(key)) return -1;
          seen.add(key);
          rows.push(input);
          return rows.length - 1;
        }),
      );
    }
    const column = <T>(pick: (input: StoreInput) => T) => rows.map(pick);
    const sql = this.sql;
    const stored = await sql<{ key: string }[]>`
      with input as (
        select * from unnest(
          ${column(keyOf)}::text[],
          ${column((i) => i.notification.id)}::text[],
          ${column((i) => i.provider)}::text[],
          ${column((i) => i.notification.event)}::text[],
          ${column((i) => i.notification.orderId)}::bigint[],
          ${column((i) => i.notification.paymentRef)}::text[],
          ${column((i) => i.notification.amount)}::bigint[],
          ${column((i) => i.notification.currency)}::text[],
          ${column((i) => i.rawBody)}::text[],
          ${column((i) => i.sourceIp)}::text[],
          ${column((i) => i.traceparent)}::text[],
          ${column((i) => i.messageSubject ?? null)}::text[],
          ${column((i) => i.notification.ignored ?? null)}::text[],
          ${column((i) => i.notification.stage ?? null)}::text[],
          ${column((i) => i.source ?? "webhook")}::text[]
        ) with ordinality as i(key, id, provider, event, order_id, payment_ref, amount, currency,
          raw_body, source_ip, traceparent, subject, ignored, stage, source, n)
      ), stored as (
        insert into payments.notifications (id, provider, event, order_id, payment_ref, amount,
          currency, raw_body, source_ip, traceparent, ignored, stage, source)
        select id, provider, event, order_id, payment_ref, amount, currency, raw_body, source_ip,
          traceparent, ignored, stage, source
        from input order by n
        on conflict (key) do nothing
        returning key, provider, order_id, payment_ref, amount, currency, received_at, traceparent,
          stage, source
      ), queued as (
        insert into payments.outbox (subject, message_id, payload, headers)
        select subject, key, ${messagePayload(sql)},
          case when traceparent is null then null
            else pg_catalog.jsonb_build_object('traceparent', traceparent) end
        from (select s.*, i.subject, i.n from stored s join input i using (key)) as r
        where subject is not null
        order by n
      )
      select key from stored`;
    const isNew = new Set(stored.map((row) => row.key));
    let outboxWritten = false;
    const results = group.map((inputs, r) => {
      const each = inputs.map((input, k) => {
        const fresh = positions[r][k] >= 0 && isNew.has(keyOf(input));
        if (fresh && input.messageSubject !== undefined) outboxWritten = true;
        return fresh;
      });
      return {
        duplicate: !each.some(Boolean),
        outboxWritten: each.some((fresh, k) => fresh && inputs[k].messageSubject !== undefined),
        stored: each,
      };
    });
    if (outboxWritten) this.options.outboxWritten?.();
    return results;
  }
}

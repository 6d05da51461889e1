import type { DisputeStage, NotificationSource } from "@commerce/shared/contract/messages";
import { auditLogTable } from "@commerce/shared/platform/audit-log";
import { outboxTable } from "@commerce/shared/platform/outbox/table";
import { sql } from "drizzle-orm";
import {
  bigint,
  check,
  index,
  integer,
  jsonb,
  pgSchema,
  primaryKey,
  text,
  timestamp,
} from "drizzle-orm/pg-core";

export const payments = pgSchema("payments");

/**
 * Every accepted payment notification, raw body kept (W5), identified by its provider and its
 * notification id (W4, S2, Y2, G5): `key` spells the pair as one text (`notificationKey` in
 * shared/src/contract/messages.ts; the database computes it, so no row can disagree).
 */
export const notifications = payments.table(
  "notifications",
  {
    /** G5: the provider and its id as one text: the message's notification_id and Nats-Msg-Id. */
    key: text("key")
      .primaryKey()
      .generatedAlwaysAs(
        sql`case when provider = 'generic' then case when id ~ '^(generic|stripe|adyen):' then 'generic:' || id else id end when starts_with(id, provider || ':') then id else provider || ':' || id end`,
      ),
    /** The provider's own id (W4, S2, Y2), unique within its provider. */
    id: text("id").notNull(),
    /** G1: who sent it: `generic` (the seed's format), `stripe` or `adyen`. */
    provider: text("provider").notNull().default("generic"),
    event: text("event").notNull(),
    /** G2: null when the notification names no order (or not as a positive integer). */
    orderId: bigint("order_id", { mode: "number" }),
    /** M1: the provider's id of the payment it is about; null for rows from before M1. */
    paymentRef: text("payment_ref"),
    /** Null for an event that carries no amount (G2: stored, never a message). */
    amount: bigint("amount", { mode: "number" }),
    currency: text("currency"),
    rawBody: text("raw_body").notNull(),
    receivedAt: timestamp("received_at", { withTimezone: true }).notNull().defaultNow(),
    sourceIp: text("source_ip").notNull(),
    /** O8: the W3C traceparent of the request that delivered it; null for rows older than O8. */
    traceparent: text("traceparent"),
    /** G4: why a notification that would move money made no message; null when none was withheld. */
    ignored: text("ignored"),
    /** L5: a dispute's stage, for its message (and every replay of it). */
    stage: text("stage").$type<DisputeStage>(),
    /**
     * B1, B3: how it reached payments: `webhook` (the provider sent it), or `reconciliation` (a
     * run found it at the provider: an event never delivered, a state no event explained, a
     * report's line). Its message says so, and the order's timeline shows it (T1).
     */
    source: text("source").$type<NotificationSource>().notNull().default("webhook"),
  },
  (table) => [
    // V3: an operator may still name a notification by its provider's bare id.
    index("notifications_id_idx").on(table.id),
    index("notifications_order_id_idx").on(table.orderId),
    // V3: the operator's list, newest first.
    index("notifications_received_at_idx").on(table.receivedAt, table.id),
    index("notifications_provider_received_at_idx").on(table.provider, table.receivedAt, table.id),
    // B1: reconciliation asks whether a stored notification of a payment explains its state,
    // a page of payments at a time: an index lookup per payment, whatever the table's size.
    index("notifications_provider_payment_ref_idx").on(table.provider, table.paymentRef),
  ],
);

/** Every row carries its notification id; V3 finds a notification's message and replays by it. */
export const outbox = outboxTable(payments, (table) => [
  index("outbox_notification_id_idx").on(sql`(${table.payload}->>'notification_id')`),
  // B2: the anti-entropy check pages through what was published in its window by this key.
  index("outbox_published_at_idx")
    .on(table.publishedAt, table.id)
    .where(sql`${table.publishedAt} is not null`),
]);

/**
 * V4: the notifications provider routes refused, gathered in memory and added here in batches
 * (RefusalTally): one row per provider, reason and minute, shared by every replica. Never a body
 * or a signature: a count, the first and last time, the latest few examples (at, source_ip,
 * reason, the claimed order_id).
 */
export const refusedNotifications = payments.table(
  "refused_notifications",
  {
    provider: text("provider").notNull(),
    reason: text("reason").notNull(),
    minute: timestamp("minute", { withTimezone: true }).notNull(),
    count: bigint("count", { mode: "number" }).notNull(),
    firstAt: timestamp("first_at", { withTimezone: true }).notNull(),
    lastAt: timestamp("last_at", { withTimezone: true }).notNull(),
    examples: jsonb("examples").notNull().default([]),
  },
  (table) => [
    primaryKey({ columns: [table.provider, table.reason, table.minute] }),
    index("refused_notifications_minute_idx").on(table.minute),
  ],
);

/**
 * N21 (v5): the refusals that named an order, per order, provider and reason: the true count and
 * the first and latest few examples. A flood naming other orders cannot touch an order's row, so
 * it cannot push that order's refusals out of its page.
 */
export const orderRefusals = payments.table(
  "order_refusals",
  {
    orderId: bigint("order_id", { mode: "number" }).notNull(),
    provider: text("provider").notNull(),
    reason: text("reason").notNull(),
    count: bigint("count", { mode: "number" }).notNull(),
    firstAt: timestamp("first_at", { withTimezone: true }).notNull(),
    lastAt: timestamp("last_at", { withTimezone: true }).notNull(),
    /** The first examples, kept whatever comes after them. */
    firstExamples: jsonb("first_examples").notNull().default([]),
    /** The latest examples. */
    latestExamples: jsonb("latest_examples").notNull().default([]),
  },
  (table) => [
    primaryKey({ columns: [table.orderId, table.provider, table.reason] }),
    index("order_refusals_last_at_idx").on(table.lastAt),
  ],
);

/** V5: what an operator did on payments that moves no order (a replay), by whom and why. */
export const auditLog = auditLogTable(payments, (table) => [
  index("audit_log_at_idx").on(table.at, table.id),
]);

export const refundStates = ["requested", "pending", "succeeded", "failed", "unknown"] as const;
export type RefundState = (typeof refundStates)[number];

/**
 * F2, F3: each refund the api asked for (`orders.refund_requested`), once by its id, and where it
 * stands at the provider. The refund worker claims due rows under a lease (`leased_until`), so
 * replicas share them and a payments service killed mid-call leaves a lease that expires; every
 * attempt uses the key `refund-<refund_id>`. `unknown`: no definite answer within
 * REFUND_GIVE_UP_HOURS, and nothing is tried again.
 */
export const refunds = payments.table(
  "refunds",
  {
    refundId: bigint("refund_id", { mode: "number" }).primaryKey(),
    orderId: bigint("order_id", { mode: "number" }).notNull(),
    provider: text("provider").notNull(),
    paymentRef: text("payment_ref").notNull(),
    amount: bigint("amount", { mode: "number" }).notNull(),
    currency: text("currency").notNull(),
    reason: text("reason"),
    status: text("status", { enum: refundStates }).notNull().default("requested"),
    providerRefundId: text("provider_refund_id"),
    failureReason: text("failure_reason"),
    /** Calls made to the provider for it (the back-off's position). */
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true }).notNull().defaultNow(),
    leasedUntil: timestamp("leased_until", { withTimezone: true }),
    receivedAt: timestamp("received_at", { withTimezone: true }).notNull().defaultNow(),
    settledAt: timestamp("settled_at", { withTimezone: true }),
    /**
     * The subject the request came on: a worker takes only its own topology's refunds (stacks
     * with their own NATS_PREFIX share a database in tests).
     */
    requestSubject: text("request_subject").notNull(),
  },
  (table) => [
    // F3: the worker reads the due refunds in this order, from the few not yet settled.
    index("refunds_due_idx")
      .on(table.nextAttemptAt)
      .where(sql`${table.status} in ('requested', 'pending')`),
    check(
      "refunds_status_check",
      sql`${table.status} in ('requested', 'pending', 'succeeded', 'failed', 'unknown')`,
    ),
  ],
);

/**
 * B3: one reconciliation run, as the operator lists them. `scope` is the stream it checked
 * (`PAYMENTS`, or a test stack's own): stacks sharing a database list only their own runs.
 * `provider` is null for a kind that is not one provider's (B2's `inbox`).
 */
export const reconciliationRuns = payments.table(
  "reconciliation_runs",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    scope: text("scope").notNull(),
    provider: text("provider"),
    kind: text("kind").notNull(),
    windowFrom: timestamp("window_from", { withTimezone: true }).notNull(),
    windowTo: timestamp("window_to", { withTimezone: true }).notNull(),
    startedAt: timestamp("started_at", { withTimezone: true }).notNull().defaultNow(),
    /** Null while it runs, or when it was cut off (its checkpoint did not move). */
    finishedAt: timestamp("finished_at", { withTimezone: true }),
    checked: integer("checked").notNull().default(0),
    found: integer("found").notNull().default(0),
    applied: integer("applied").notNull().default(0),
    errors: integer("errors").notNull().default(0),
  },
  // B3's listing, newest first, and the retention that deletes old runs.
  (table) => [index("reconciliation_runs_scope_idx").on(table.scope, table.startedAt, table.id)],
);

/**
 * B2 (and B1's kinds): one row per kind of run and scope. A run holds its row locked
 * (`for update skip locked`, N14 v5: a row of this schema, never an advisory lock), so one
 * replica runs at a time, and moves `checked_until` when it completes: the next run starts there.
 */
export const reconciliationCheckpoints = payments.table(
  "reconciliation_checkpoints",
  {
    kind: text("kind").notNull(),
    scope: text("scope").notNull(),
    /** Everything published up to here was compared (B2); null before the first complete run. */
    checkedUntil: timestamp("checked_until", { withTimezone: true }),
  },
  (table) => [primaryKey({ columns: [table.kind, table.scope] })],
);

export const adyenReportStates = ["due", "done", "refused", "failed"] as const;

/**
 * B1: each Adyen report a REPORT_AVAILABLE notification named (its notification's key), as a
 * durable job: the report worker claims a due one under a lease (`FOR UPDATE SKIP LOCKED`, one
 * replica at a time per report; a process killed mid-report leaves a lease that expires and the
 * report is read again: its lines' notification ids make that harmless), downloads and compares
 * it, and records how it ended: `done`, `refused` (never fetched, or not read: a URL outside
 * ADYEN_REPORT_URL_PREFIX, too large, not a report), `failed` (a definite refusal by Adyen, or no
 * answer for a day). A failed download is tried again after a back-off. `scope` is the stream of
 * the stack that received it (stacks sharing a database in tests each read their own).
 */
export const adyenReports = payments.table(
  "adyen_reports",
  {
    scope: text("scope").notNull(),
    notificationKey: text("notification_key").notNull(),
    fileName: text("file_name").notNull(),
    url: text("url").notNull(),
    status: text("status", { enum: adyenReportStates }).notNull().default("due"),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true }).notNull().defaultNow(),
    leasedUntil: timestamp("leased_until", { withTimezone: true }),
    /** Who holds the lease now: only its holder records the outcome. */
    leaseToken: text("lease_token"),
    /** The last run (B3) that read it. */
    runId: bigint("run_id", { mode: "number" }),
    receivedAt: timestamp("received_at", { withTimezone: true }).notNull().defaultNow(),
    finishedAt: timestamp("finished_at", { withTimezone: true }),
  },
  (table) => [
    primaryKey({ columns: [table.scope, table.notificationKey] }),
    index("adyen_reports_due_idx")
      .on(table.scope, table.nextAttemptAt)
      .where(sql`${table.status} = 'due'`),
    check(
      "adyen_reports_status_check",
      sql`${table.status} in ('due', 'done', 'refused', 'failed')`,
    ),
  ],
);

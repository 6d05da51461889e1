import { type MessageTopology, notificationKey } from "@commerce/shared/contract/messages";
import type { Sql } from "@commerce/shared/platform/database";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import type { Metrics } from "@commerce/shared/platform/metrics";
import { notificationSubject } from "../../lib/outbox-message";
import { GroupCommit } from "../notifications/group-commit";
import type {
  ReconcileCandidate,
  ReconcileClient,
  ReconcilePage,
  ReconcileSkip,
} from "../providers/provider";
import { recordStep, refundOf } from "../refunds/ledger";
import { reconciliationMetrics } from "./metrics";

export type ProviderRunsDeps = {
  sql: Sql;
  topology: MessageTopology;
  logger: Logger;
  metrics: Metrics;
  /** Called after a run wrote outbox rows, so the relay publishes them now. */
  outboxWritten: () => void;
  /** B1: each configured provider with an API that reconciliation asks. */
  clients: ReconcileClient[];
  /** RECONCILE_INTERVAL_SECONDS in ms; 0 = never on a timer (`runOnce` still works). */
  intervalMs: number;
  /** F7: whether the provider's API circuit is open (the refund worker's): no run asks it then. */
  circuitOpen?: (provider: string) => boolean;
};

/** What one run did (B3's run row). */
export type ProviderRun = {
  id: number;
  provider: string;
  kind: string;
  window_from: string;
  window_to: string;
  checked: number;
  found: number;
  applied: number;
  errors: number;
};

/** B1: each run re-reads this much before the last complete run's end. */
const overlap = "10 minutes";
/** B4: Stripe keeps events this long; a gap longer than that is the object sweep's. */
const longestWindow = "30 days";
/** Runs that found, skipped and failed nothing are listed this long; the others 30 days. */
const keepQuietRuns = "1 day";
const keepRuns = "30 days";
/** A provider's notification is received after the object it tells of was made, give or take. */
const clockSkew = "1 day";
/** The ids named in one log line at most. */
const loggedIds = 50;

/**
 * B1, B4: reconciliation with each provider's API, every RECONCILE_INTERVAL_SECONDS: per provider
 * and kind (Stripe: `events`, `objects`), one run at a time across replicas, the run holding its
 * checkpoint row locked (`payments.reconciliation_checkpoints`, kind `<provider>:<kind>`, N14 v5:
 * never an advisory lock). A run covers the window from the last complete run's end less 10
 * minutes (30 days back at most, and with no complete run yet), lists what the provider holds
 * there, and stores each state no stored notification explains as the notification its webhook
 * would have been (`source` reconciliation), through the intake's own group commit: a repeat is a
 * duplicate by its key (W5), so a run killed halfway and run again does nothing twice. A run that
 * fails (the API down, slow or 5xx, its circuit open, the database) is recorded with `errors` and
 * leaves the checkpoint where it was: the next run covers the whole gap. Nothing waits on a run.
 */
export class ProviderReconciliation {
  private timer?: Timer;
  private running?: Promise<unknown>;
  private stopped = false;
  private readonly store: GroupCommit;
  private readonly runs;
  private readonly found;
  private readonly skipped;

  constructor(private readonly deps: ProviderRunsDeps) {
    // Not the webhook's 1.5 s answer: nobody waits on a run, and its pages may be large.
    this.store = new GroupCommit(deps.sql, {
      outboxWritten: deps.outboxWritten,
      answerWithinMs: 15_000,
      abandonAfterMs: 30_000,
    });
    ({
      runs: this.runs,
      found: this.found,
      skipped: this.skipped,
    } = reconciliationMetrics(deps.metrics));
    for (const client of deps.clients)
      for (const kind of Object.keys(client.kinds)) {
        for (const outcome of ["complete", "failed"])
          this.runs.inc({ provider: client.provider, kind, outcome }, 0);
        this.found.inc({ provider: client.provider, kind }, 0);
      }
    deps.metrics.labelledGauge(
      "reconciliation_last_complete_run_timestamp_seconds",
      "B1, B4: when the last complete reconciliation run of each provider and kind started (unix seconds)",
      ["provider", "kind"],
      async () => {
        const rows = await deps.sql<{ provider: string; kind: string; at: number }[]>`
          select split_part(kind, ':', 1) as provider, split_part(kind, ':', 2) as kind,
            extract(epoch from checked_until)::float8 as at
          from payments.reconciliation_checkpoints
          where scope = ${deps.topology.payments.stream} and kind like '%:%'
            and checked_until is not null`;
        return rows.map(({ provider, kind, at }) => ({ labels: { provider, kind }, value: at }));
      },
    );
  }

  /** The timer; the first runs come one interval after the service is ready. */
  start(): void {
    if (this.deps.intervalMs <= 0 || this.deps.clients.length === 0) return;
    this.timer = setInterval(() => this.tick(), this.deps.intervalMs);
  }

  private tick(): void {
    if (this.running || this.stopped) return;
    this.running = this.runAll().finally(() => {
      this.running = undefined;
    });
  }

  /** Each provider's kinds, one after another (events before objects: they explain states). */
  private async runAll(): Promise<void> {
    for (const client of this.deps.clients)
      for (const kind of Object.keys(client.kinds)) {
        if (this.stopped) return;
        const provider = client.provider;
        try {
          const run = await this.runOnce(client, kind);
          // Counted once its checkpoint is committed (or kept): a run another replica has is none.
          if (run)
            this.runs.inc({ provider, kind, outcome: run.errors === 0 ? "complete" : "failed" });
        } catch (error) {
          // The database failed around the run (its row or checkpoint): the checkpoint stays.
          this.runs.inc({ provider, kind, outcome: "failed" });
          this.deps.logger.warn("reconciliation run failed", {
            provider,
            kind,
            ...describeError(error),
          });
        }
      }
  }

  /** Stops the timer and waits for a run in flight, which stops after its page (O7). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  /**
   * One run of `kind` with `client`'s provider: undefined when another replica holds the
   * checkpoint (it is running now). The checkpoint moves only when the run completed.
   */
  async runOnce(client: ReconcileClient, kind: string): Promise<ProviderRun | undefined> {
    const { sql, topology } = this.deps;
    const scope = topology.payments.stream;
    const checkpoint = `${client.provider}:${kind}`;
    return sql.begin(async (tx) => {
      // N14 (v5): no wait on a lock without an end (a first run racing another's insert).
      await tx`set local lock_timeout = '5s'`;
      await tx`
        insert into payments.reconciliation_checkpoints (kind, scope) values (${checkpoint}, ${scope})
        on conflict do nothing`;
      const follows = client.follows?.[kind];
      const [window] = await tx<
        { from: string; to: string; from_seconds: number; to_seconds: number }[]
      >`
        with bounds as (
          select greatest(coalesce(checked_until - ${overlap}::interval, now() - ${longestWindow}::interval),
            now() - ${longestWindow}::interval) as from_at,
            least(now(), coalesce((select checked_until from payments.reconciliation_checkpoints
              where kind = ${`${client.provider}:${follows}`} and scope = ${scope}
                and ${follows !== undefined}), now())) as to_at
          from payments.reconciliation_checkpoints where kind = ${checkpoint} and scope = ${scope}
          for update skip locked
        )
        select from_at::text as from, to_at::text as to,
          floor(extract(epoch from from_at))::float8 as from_seconds,
          -- Stripe's created is in whole seconds: the last second may not be whole yet.
          floor(extract(epoch from to_at))::float8 - 1 as to_seconds
        from bounds`;
      if (!window) return undefined;
      const run = await this.execute(client, kind, window);
      if (run.errors === 0)
        await tx`
          update payments.reconciliation_checkpoints set checked_until = ${window.to}::text::timestamptz
          where kind = ${checkpoint} and scope = ${scope}`;
      return run;
    });
  }

  private async execute(
    client: ReconcileClient,
    kind: string,
    window: { from: string; to: string; from_seconds: number; to_seconds: number },
  ): Promise<ProviderRun> {
    const { sql, topology, logger } = this.deps;
    const provider = client.provider;
    const [started] = await sql<{ id: string; window_from: string; window_to: string }[]>`
      insert into payments.reconciliation_runs (scope, provider, kind, window_from, window_to)
      values (${topology.payments.stream}, ${provider}, ${kind}, ${window.from}::text::timestamptz,
        ${window.to}::text::timestamptz)
      returning id, window_from::text, window_to::text`;
    const run: ProviderRun = {
      id: Number(started.id),
      provider,
      kind,
      window_from: started.window_from,
      window_to: started.window_to,
      checked: 0,
      found: 0,
      applied: 0,
      errors: 0,
    };
    const foundIds: string[] = [];
    const skips: ReconcileSkip[] = [];
    const startedAt = performance.now();
    try {
      if (this.deps.circuitOpen?.(provider)) throw new Error(`the ${provider} API circuit is open`);
      for await (const page of client.kinds[kind](window.from_seconds, window.to_seconds)) {
        await this.apply(client, kind, page, run, foundIds, skips);
        // O7: a shutdown ends the run after its page; the next one covers the window again.
        if (this.stopped) throw new Error("the service is stopping");
      }
    } catch (error) {
      run.errors++;
      logger.warn("reconciliation run cut short", {
        run_id: run.id,
        provider,
        kind,
        checked: run.checked,
        ...describeError(error),
      });
    }
    await sql`
      update payments.reconciliation_runs set finished_at = now(), checked = ${run.checked},
        found = ${run.found}, applied = ${run.applied}, errors = ${run.errors}
      where id = ${run.id}`;
    await sql`
      delete from payments.reconciliation_runs
      where scope = ${topology.payments.stream} and provider = ${provider} and kind = ${kind}
        and started_at < now() - ${keepQuietRuns}::interval
        and (started_at < now() - ${keepRuns}::interval or (found = 0 and errors = 0))`;
    // One line per run: what it covered and found (notification ids; never a key or a secret).
    const line = {
      run_id: run.id,
      provider,
      kind,
      window_from: run.window_from,
      window_to: run.window_to,
      checked: run.checked,
      found: run.found,
      applied: run.applied,
      errors: run.errors,
      skipped: skips.length,
      duration_ms: Math.round(performance.now() - startedAt),
      ...(foundIds.length ? { notification_ids: foundIds.slice(0, loggedIds) } : {}),
      ...(skips.length ? { skipped_items: skips.slice(0, loggedIds) } : {}),
    };
    if (run.found > 0 || skips.length > 0) logger.warn("reconciliation run", line);
    else logger.info("reconciliation run", line);
    return run;
  }

  /** One page: what is not stored yet (events) or not explained (objects) is stored now. */
  private async apply(
    client: ReconcileClient,
    kind: string,
    page: ReconcilePage,
    run: ProviderRun,
    foundIds: string[],
    skips: ReconcileSkip[],
  ): Promise<void> {
    const provider = client.provider;
    run.checked += page.checked;
    for (const skip of page.skipped) {
      this.skipped.inc({ provider, reason: skip.reason });
      skips.push(skip);
    }
    const keyOf = (candidate: ReconcileCandidate) =>
      notificationKey(provider, candidate.notification.id);
    const candidates = page.candidates;
    if (candidates.length === 0) return;
    const known = new Set(
      (
        await this.deps.sql<{ key: string }[]>`
          select key from payments.notifications where key = any(${candidates.map(keyOf)}::text[])`
      ).map((row) => row.key),
    );
    const unknown: ReconcileCandidate[] = [];
    for (const candidate of candidates) {
      if (known.has(keyOf(candidate))) continue;
      if (candidate.shopRefund) {
        const confirmed = await this.confirmShopRefund(candidate, run);
        if (confirmed === "settled") continue;
        if (confirmed === "confirmed") {
          run.found++;
          foundIds.push(`refund-${candidate.shopRefund.refundId}`);
          if (candidate.shopRefund.status !== "succeeded") continue;
        }
      }
      unknown.push(candidate);
    }
    const explained = await this.explained(unknown, run);
    const missing = unknown.filter((_, i) => !explained.has(i));
    if (missing.length === 0) return;
    const { stored } = await this.store.store(
      missing.map((candidate) => ({
        provider,
        notification: candidate.notification,
        rawBody: candidate.rawBody,
        sourceIp: client.source,
        traceparent: null,
        messageSubject: notificationSubject(candidate.notification, this.deps.topology),
        source: "reconciliation",
      })),
    );
    const applied = stored.filter(Boolean).length;
    run.found += missing.length;
    run.applied += applied;
    this.found.inc({ provider, kind }, applied);
    foundIds.push(...missing.map(keyOf));
  }

  /**
   * F3: a refund the shop asked for, which the provider says succeeded or failed: its ledger row
   * takes that outcome (the worker's own step, so the api hears it once), never a second refund.
   * `settled` when the ledger already knew; `other` when it is not this shop's refund.
   */
  private async confirmShopRefund(
    candidate: ReconcileCandidate,
    run: ProviderRun,
  ): Promise<"settled" | "confirmed" | "other"> {
    const shop = candidate.shopRefund as NonNullable<ReconcileCandidate["shopRefund"]>;
    const { sql, topology } = this.deps;
    const row = await refundOf(
      sql,
      topology.orders.event("refund_requested"),
      shop.refundId,
      run.provider,
    );
    if (!row) return "other";
    if (row.status !== "requested" && row.status !== "pending") return "settled";
    const wrote = await recordStep(sql, topology, row, {
      status: shop.status,
      providerRefundId: shop.providerRefundId,
      failureReason: shop.reason,
      retryInMs: 0,
    });
    if (wrote) {
      this.deps.outboxWritten();
      run.applied++;
    }
    return "confirmed";
  }

  /**
   * B1: which of `candidates` (their indexes) a stored notification of their payment tells of
   * already: one query for the page, each payment an index lookup (provider, payment_ref), so the
   * cost follows the page, not the table (issue 38: one query per payment, each reading the
   * window's notifications, took 216 s for 1,000 payments over 100,000 stored notifications).
   */
  private async explained(
    candidates: ReconcileCandidate[],
    run: ProviderRun,
  ): Promise<Set<number>> {
    // One row per candidate and event that would explain it.
    const asked = candidates.flatMap((candidate, i) => {
      const by = candidate.explainedBy;
      if (!by) return [];
      return by.events.map((event) => ({
        i,
        ref: by.paymentRef,
        event,
        minAmount: by.minAmount ?? null,
      }));
    });
    if (asked.length === 0) return new Set();
    // Each asked row probes the (provider, payment_ref) index once (the lateral subquery with its
    // limit is run per row: never a hash of the whole table).
    const rows = await this.deps.sql<{ i: number }[]>`
      select distinct asked.i
      from unnest(${asked.map((a) => a.i)}::int[], ${asked.map((a) => a.ref)}::text[],
        ${asked.map((a) => a.event)}::text[], ${asked.map((a) => a.minAmount)}::bigint[])
        as asked(i, ref, event, min_amount)
      cross join lateral (
        select 1 from payments.notifications
        where provider = ${run.provider} and payment_ref = asked.ref and event = asked.event
          and received_at >= ${run.window_from}::text::timestamptz - ${clockSkew}::interval
          and (asked.min_amount is null or amount >= asked.min_amount)
        limit 1
      ) as found`;
    return new Set(rows.map((row) => row.i));
  }
}

import { maxAskedIds, parseAppliedAnswer } from "@commerce/shared/contract/applied-notifications";
import type { MessageTopology } from "@commerce/shared/contract/messages";
import type { Sql } from "@commerce/shared/platform/database";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import type { Metrics } from "@commerce/shared/platform/metrics";
import type { NatsLink } from "@commerce/shared/platform/nats";

export type AntiEntropySettings = {
  /** Between two runs; 0 = never on a timer (`runOnce` still works). */
  intervalMs: number;
  /** The trailing window: nothing published before `now - windowMs` is looked at. */
  windowMs: number;
  /** A message published less than this long ago may still be on its way: not missing yet. */
  graceMs: number;
};

export type AntiEntropyDeps = {
  sql: Sql;
  nats: NatsLink;
  topology: MessageTopology;
  logger: Logger;
  metrics: Metrics;
  /** Called after resends were queued, so the relay publishes them now. */
  outboxWritten: () => void;
  settings: AntiEntropySettings;
  /** Messages compared per question to the api (default and at most `maxAskedIds`). */
  pageSize?: number;
};

/** What one run did (B3's run row). */
export type InboxRun = {
  id: number;
  window_from: string;
  window_to: string;
  checked: number;
  found: number;
  applied: number;
  errors: number;
};

const kind = "inbox";
/**
 * A run re-reads this much before the last complete run's end: the relay marks a row published
 * with its transaction's start time, so a row can become visible a few seconds after a time a
 * run already passed.
 */
const overlapMs = 60_000;
/**
 * A message published later than this before the oldest one the api's consumer still has to
 * apply may be in that backlog, not lost (the stream's clock is NATS's, published_at is
 * PostgreSQL's).
 */
const backlogMarginMs = 5_000;
/** How long the api has to answer one question. */
const askTimeoutMs = 5_000;
/** Runs that found nothing are listed this long; the others (found, cut short) for `keepRuns`. */
const keepQuietRuns = "1 day";
const keepRuns = "30 days";
/** A notification published again this often and still never applied is left to a person. */
export const maxResends = 5;

/**
 * Timestamps go to and from PostgreSQL as text (`${at}::text::timestamptz`): a parameter typed
 * timestamptz passes through a JS Date, which drops the microseconds a keyset needs.
 */
type PublishedRow = {
  id: string;
  notification_id: string | null;
  published_at: string;
  published_ms: number;
};

const encoder = new TextEncoder();

/**
 * B2, anti-entropy between the services: compares what payments published (its outbox rows
 * marked published) with what the api's inbox applied (its processed notification ids), over a
 * trailing window, a page of ids at a time by keyset on `(published_at, id)`; a notification
 * published more than the grace ago that the api never applied is published again: a copy of
 * its outbox row (same subject, payload, headers) under a message id of its own,
 * `<notification id>:resend:<row id>`, so JetStream's duplicate window does not drop it, while
 * the api's idempotent inbox (M2) applies the notification once. Each run starts where the last
 * complete run ended (less an overlap), so a run costs what was published since, not the history.
 * One run at a time across replicas: the run holds its checkpoint row locked (N14 v5).
 */
export class AntiEntropy {
  private timer?: Timer;
  private running?: Promise<unknown>;
  private stopped = false;
  private readonly pageSize: number;
  private readonly gaps;
  private readonly runs;

  constructor(private readonly deps: AntiEntropyDeps) {
    this.pageSize = Math.min(deps.pageSize ?? maxAskedIds, maxAskedIds);
    this.gaps = deps.metrics.counter(
      "money_path_gaps_found_total",
      "B2: notifications payments published that the api never applied, found by the anti-entropy check and published again",
    );
    this.runs = deps.metrics.counter(
      "anti_entropy_runs_total",
      "B2: anti-entropy runs by outcome: complete, cut_short (the api did not answer, or the database failed)",
      ["outcome"],
    );
    for (const outcome of ["complete", "cut_short"]) this.runs.inc({ outcome }, 0);
  }

  start(): void {
    if (this.deps.settings.intervalMs <= 0) return;
    this.timer = setInterval(() => this.tick(), this.deps.settings.intervalMs);
  }

  private tick(): void {
    if (this.running || this.stopped) return;
    this.running = this.runOnce()
      .catch((error) => {
        this.runs.inc({ outcome: "cut_short" });
        this.deps.logger.warn("anti-entropy run failed", describeError(error));
      })
      .finally(() => {
        this.running = undefined;
      });
  }

  /** Stops the timer and waits for a run in flight (O7). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  /**
   * One run: undefined when another replica holds the checkpoint (it is running now).
   * The checkpoint moves only when every page was compared.
   */
  async runOnce(): Promise<InboxRun | undefined> {
    const { sql, topology, settings } = this.deps;
    const scope = topology.payments.stream;
    return sql.begin(async (tx) => {
      // N14 (v5): no wait on a lock without an end (a first run racing another's insert).
      await tx`set local lock_timeout = '5s'`;
      await tx`
        insert into payments.reconciliation_checkpoints (kind, scope) values (${kind}, ${scope})
        on conflict do nothing`;
      const [window] = await tx<{ from: string; to: string }[]>`
        select greatest(checked_until - ${overlapMs} * interval '1 millisecond',
            now() - ${settings.windowMs} * interval '1 millisecond')::text as from,
          (now() - ${settings.graceMs} * interval '1 millisecond')::text as to
        from payments.reconciliation_checkpoints where kind = ${kind} and scope = ${scope}
        for update skip locked`;
      if (!window) return undefined;
      const { run, waiting } = await this.compare(window);
      // What may still be in the api's backlog is read again by the next run, however long it is.
      const until = waiting?.published_at ?? window.to;
      if (run.errors === 0)
        await tx`
          update payments.reconciliation_checkpoints set checked_until = ${until}::text::timestamptz
          where kind = ${kind} and scope = ${scope}`;
      return run;
    });
  }

  /** The run, and the first message it left for later because the api may not have reached it. */
  private async compare(window: {
    from: string;
    to: string;
  }): Promise<{ run: InboxRun; waiting?: PublishedRow }> {
    const { sql, topology, logger } = this.deps;
    const [started] = await sql<{ id: string; window_from: string; window_to: string }[]>`
      insert into payments.reconciliation_runs (scope, kind, window_from, window_to)
      values (${topology.payments.stream}, ${kind}, ${window.from}::text::timestamptz, ${window.to}::text::timestamptz)
      returning id, window_from::text, window_to::text`;
    const run: InboxRun = {
      id: Number(started.id),
      window_from: started.window_from,
      window_to: started.window_to,
      checked: 0,
      found: 0,
      applied: 0,
      errors: 0,
    };
    let after = { at: window.from, id: "0" };
    let waiting: PublishedRow | undefined;
    try {
      for (;;) {
        const page = await this.publishedPage(after, window.to);
        if (page.length === 0) break;
        waiting ??= await this.comparePage(page, run);
        const last = page[page.length - 1];
        after = { at: last.published_at, id: last.id };
        if (page.length < this.pageSize) break;
      }
    } catch (error) {
      run.errors++;
      logger.warn("anti-entropy run cut short", {
        run_id: run.id,
        checked: run.checked,
        ...describeError(error),
      });
    }
    this.runs.inc({ outcome: run.errors === 0 ? "complete" : "cut_short" });
    await sql`
      update payments.reconciliation_runs set finished_at = now(), checked = ${run.checked},
        found = ${run.found}, applied = ${run.applied}, errors = ${run.errors}
      where id = ${run.id}`;
    // One run every few seconds: the listing stays the last day's, plus what found something.
    await sql`
      delete from payments.reconciliation_runs
      where scope = ${topology.payments.stream} and kind = ${kind}
        and started_at < now() - ${keepQuietRuns}::interval
        and (started_at < now() - ${keepRuns}::interval or (found = 0 and errors = 0))`;
    return { run, waiting };
  }

  /**
   * The next page of this stack's published messages in the window, by `(published_at, id)`:
   * the table's columns (not the text the select names alike), in the order of its index.
   */
  private publishedPage(after: { at: string; id: string }, to: string) {
    const { sql, topology } = this.deps;
    const { orderPaid, orderRefunded, orderFailed, orderDisputed } = topology.payments;
    return sql<PublishedRow[]>`
      select id::text, payload->>'notification_id' as notification_id,
        published_at::text as published_at,
        (extract(epoch from published_at) * 1000)::float8 as published_ms
      from payments.outbox
      where published_at is not null
        and (published_at, id) > (${after.at}::text::timestamptz, ${after.id}::bigint)
        and published_at <= ${to}::text::timestamptz
        and subject = any(${[orderPaid, orderRefunded, orderFailed, orderDisputed]})
      order by outbox.published_at, outbox.id
      limit ${this.pageSize}`;
  }

  /** Compares one page; returns its first row that may still be in the api's backlog. */
  private async comparePage(
    page: PublishedRow[],
    run: InboxRun,
  ): Promise<PublishedRow | undefined> {
    const rowOf = new Map<string, PublishedRow>();
    for (const row of page) if (row.notification_id) rowOf.set(row.notification_id, row);
    run.checked += page.length;
    if (rowOf.size === 0) return undefined;
    const answer = await this.askApplied([...rowOf.keys()]);
    const applied = new Set(answer.applied);
    // Published after the oldest message the api's consumer still has to apply: maybe waiting in
    // that backlog, so not missing yet (and not published again onto it).
    const backlogFrom = answer.pending_since
      ? Date.parse(answer.pending_since) - backlogMarginMs
      : Number.POSITIVE_INFINITY;
    const missing = [...rowOf.entries()]
      .filter(([id, row]) => !applied.has(id) && row.published_ms < backlogFrom)
      .map(([id]) => id);
    if (missing.length) await this.publishAgain(missing, rowOf, run);
    return page.find(
      (row) =>
        row.notification_id && !applied.has(row.notification_id) && row.published_ms >= backlogFrom,
    );
  }

  /** B2: the api's answer: which of `ids` its inbox has applied. Throws when it gives none. */
  private async askApplied(
    ids: string[],
  ): Promise<{ applied: string[]; pending_since?: string | null }> {
    const nc = this.deps.nats.nc;
    if (!nc || !this.deps.nats.isUp) throw new Error("nats is not connected");
    const reply = await nc.request(
      this.deps.topology.appliedQuery,
      encoder.encode(JSON.stringify({ ids })),
      { timeout: askTimeoutMs },
    );
    const answer = parseAppliedAnswer(reply.data);
    if (!answer) throw new Error("the api's answer was malformed");
    if ("error" in answer) throw new Error(`the api could not answer: ${answer.error}`);
    return answer;
  }

  /**
   * Queues a copy of each missing notification's row, unless one of its messages is still on its
   * way (not yet published, or published within the grace) or it was resent `maxResends` times.
   */
  private async publishAgain(missing: string[], rowOf: Map<string, PublishedRow>, run: InboxRun) {
    const { sql, logger, settings } = this.deps;
    const history = await sql<{ notification_id: string; on_its_way: boolean; resends: number }[]>`
      select payload->>'notification_id' as notification_id,
        bool_or((published_at is null and dead_at is null)
          or published_at > now() - ${settings.graceMs} * interval '1 millisecond') as on_its_way,
        (count(*) filter (where message_id like '%:resend:%'))::int as resends
      from payments.outbox where payload->>'notification_id' = any(${missing})
      group by 1`;
    const gaps = history.filter((row) => !row.on_its_way);
    if (gaps.length === 0) return;
    run.found += gaps.length;
    this.gaps.inc(gaps.length);
    const givenUp = gaps.filter((row) => row.resends >= maxResends).map((r) => r.notification_id);
    if (givenUp.length)
      logger.error("money path gap: published again too often, left to a person", {
        run_id: run.id,
        notification_ids: givenUp,
        resends: maxResends,
      });
    const again = gaps.filter((row) => row.resends < maxResends);
    if (again.length === 0) return;
    const rows = again.map((row) => rowOf.get(row.notification_id)?.id as string);
    const queued = await sql<{ notification_id: string; message_id: string }[]>`
      insert into payments.outbox (id, subject, message_id, payload, headers)
      select row_id, subject, notification_id || ':resend:' || row_id, payload, headers
      from (
        select nextval(pg_get_serial_sequence('payments.outbox', 'id')) as row_id, subject,
          payload, headers, payload->>'notification_id' as notification_id
        from payments.outbox where id = any(${rows}::bigint[])
      ) copies
      returning payload->>'notification_id' as notification_id, message_id`;
    run.applied += queued.length;
    this.deps.outboxWritten();
    logger.warn("money path gaps found: published again", {
      run_id: run.id,
      notification_ids: queued.map((row) => row.notification_id),
      message_ids: queued.map((row) => row.message_id),
    });
  }
}

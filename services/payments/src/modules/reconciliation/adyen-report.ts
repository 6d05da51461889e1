import { randomUUID } from "node:crypto";
import type { MessageTopology } from "@commerce/shared/contract/messages";
import type { Sql } from "@commerce/shared/platform/database";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import type { Metrics } from "@commerce/shared/platform/metrics";
import { notificationSubject } from "../../lib/outbox-message";
import { GroupCommit, type StoreInput } from "../notifications/group-commit";
import {
  type AdyenReportSettings,
  lineNotification,
  lineReference,
  type ReportColumns,
  type ReportLine,
  reportColumnsOf,
  reportLineOf,
  reportMoves,
  underPrefix,
} from "../providers/adyen/report";
import { CsvReader } from "../providers/adyen/report-csv";
import type { AnnouncedReport, ReportSkip } from "../providers/provider";
import { reconciliationMetrics } from "./metrics";

export type AdyenReportOptions = {
  /** How often due reports are looked for besides a kick (default 5 s). */
  intervalMs?: number;
  /** How long a claimed report is this worker's; renewed while it reads (default 60 s). */
  leaseMs?: number;
  /** B4: the first wait after a failed download; it doubles (default 1 s). */
  retryBaseMs?: number;
  /** B4: the longest wait between downloads (default 5 min). */
  retryMaxMs?: number;
  /** A download (answer and body) taking longer than this fails and is tried again (default 60 s). */
  timeoutMs?: number;
  /** A report larger than this is refused, never read (default 256 MiB). */
  maxBytes?: number;
  /** A report still not downloaded this long after its notification is given up (default 24 h). */
  giveUpAfterMs?: number;
};

export type AdyenReportDeps = {
  sql: Sql;
  topology: MessageTopology;
  logger: Logger;
  metrics: Metrics;
  settings: AdyenReportSettings | undefined;
  /** G4: the shop's merchant accounts; a line of any other is skipped. */
  merchantAccounts: string[];
  outboxWritten: () => void;
};

type Job = {
  notification_key: string;
  file_name: string;
  url: string;
  attempts: number;
  received_at: Date;
  lease_token: string;
};

/** What a run read and did (B3's run row). */
type Tally = {
  runId: number;
  checked: number;
  found: number;
  applied: number;
  errors: number;
  from?: Date;
  to?: Date;
};

/** Definite: the report is not read, now or later (a log line, a count, the run's error). */
class ReportRefused extends Error {
  constructor(
    readonly reason: ReportSkip,
    message: string,
  ) {
    super(message);
  }
}

/** Adyen answered with a definite refusal (a 4xx): tried no more. */
class DownloadRefused extends Error {}

/** Lines compared and stored together. */
const batchLines = 200;
/** Malformed lines logged one by one per report; the rest only counted. */
const loggedMalformed = 20;
const kind = "report";
const provider = "adyen";

/**
 * B1, B4: Adyen's payment accounting reports. A REPORT_AVAILABLE notification the intake stored
 * becomes a row of `payments.adyen_reports` before Adyen is answered (`announce`); this worker
 * claims a due row under a lease, downloads the report (only under ADYEN_REPORT_URL_PREFIX, with
 * the report user's Basic credentials, a timeout and a size limit), reads it as it arrives, and
 * stores every Authorised, Refunded and Chargeback line of the shop's merchant accounts that no
 * stored notification explains as the notification `adyen:report:<record type>:<pspReference>`,
 * processed from there as Adyen's own (its outbox row, its message, source `reconciliation`).
 * Each attempt is a run (B3). A failed download is tried again with a back-off; a process killed
 * mid-report leaves its lease to expire, and the report is read again: what the first attempt
 * stored now explains its lines, and a notification id is stored once (W5).
 */
export class AdyenReports {
  private timer?: ReturnType<typeof setInterval>;
  private running?: Promise<void>;
  private again = false;
  private stopped = false;
  private readonly abort = new AbortController();
  private readonly options: Required<AdyenReportOptions>;
  private readonly group: GroupCommit;
  private readonly runs;
  private readonly found;
  private readonly skipped;

  constructor(
    private readonly deps: AdyenReportDeps,
    options: AdyenReportOptions = {},
  ) {
    this.options = {
      intervalMs: options.intervalMs ?? 5000,
      leaseMs: options.leaseMs ?? 60_000,
      retryBaseMs: options.retryBaseMs ?? 1000,
      retryMaxMs: options.retryMaxMs ?? 300_000,
      timeoutMs: options.timeoutMs ?? 60_000,
      maxBytes: options.maxBytes ?? 256 * 1024 * 1024,
      giveUpAfterMs: options.giveUpAfterMs ?? 86_400_000,
    };
    // A report's lines are not waited on by anyone: no 1.5 s answer limit as for a webhook.
    this.group = new GroupCommit(deps.sql, {
      outboxWritten: deps.outboxWritten,
      answerWithinMs: 30_000,
      abandonAfterMs: 30_000,
    });
    ({
      runs: this.runs,
      found: this.found,
      skipped: this.skipped,
    } = reconciliationMetrics(deps.metrics));
    for (const outcome of ["complete", "failed", "refused"])
      this.runs.inc({ provider, kind, outcome }, 0);
    this.found.inc({ provider, kind }, 0);
  }

  start(): void {
    this.timer = setInterval(() => this.kick(), this.options.intervalMs);
    this.kick();
  }

  /** O7: the report being read is cut short (its lease given back, so another replica reads it). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.abort.abort();
    await this.running;
  }

  /**
   * B1: the reports stored REPORT_AVAILABLE notifications named, recorded as due before Adyen is
   * answered (so a crash before the answer leaves Adyen to send it again, and the repeat records
   * it); a report not to be read is logged and counted once, when its notification is new.
   */
  async announce(reports: AnnouncedReport[]): Promise<void> {
    const { sql, topology, logger, settings } = this.deps;
    const due = [];
    for (const { notificationKey, report, fresh } of reports) {
      const skip = report.skip ?? (settings ? undefined : "not_configured");
      if (!skip) {
        due.push({ notificationKey, report });
        continue;
      }
      if (!fresh) continue;
      this.skipped.inc({ provider, reason: skip });
      logger[skip === "not_payment_accounting" || skip === "not_configured" ? "info" : "warn"](
        "adyen report not read",
        {
          notification_id: notificationKey,
          file_name: report.fileName,
          reason: skip,
          ...(skip === "not_configured"
            ? { hint: "set ADYEN_REPORT_USERNAME, ADYEN_REPORT_PASSWORD, ADYEN_REPORT_URL_PREFIX" }
            : {}),
        },
      );
    }
    if (due.length === 0) return;
    await sql`
      insert into payments.adyen_reports (scope, notification_key, file_name, url)
      select ${topology.payments.stream}, key, file_name, url
      from unnest(${due.map((d) => d.notificationKey)}::text[],
        ${due.map((d) => d.report.fileName)}::text[], ${due.map((d) => d.report.url)}::text[])
        as r(key, file_name, url)
      on conflict do nothing`;
    this.kick();
  }

  /** Looks for due reports now; a round already running goes again. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.rounds().finally(() => {
      this.running = undefined;
    });
  }

  private async rounds(): Promise<void> {
    do {
      this.again = false;
      try {
        const job = await this.claim();
        if (!job) continue;
        await this.read(job);
        this.again = true;
      } catch (error) {
        this.deps.logger.warn("adyen report round failed", describeError(error));
      }
    } while (this.again && !this.stopped);
  }

  /** The next due report of this stack, leased to this worker; undefined when none is due. */
  private async claim(): Promise<Job | undefined> {
    const { sql, topology } = this.deps;
    const token = randomUUID();
    const [job] = await sql<Job[]>`
      update payments.adyen_reports r
      set leased_until = now() + ${this.options.leaseMs} * interval '1 millisecond',
        lease_token = ${token}, attempts = r.attempts + 1
      where (scope, notification_key) = (
        select scope, notification_key from payments.adyen_reports
        where scope = ${topology.payments.stream} and status = 'due' and next_attempt_at <= now()
          and (leased_until is null or leased_until < now())
        order by next_attempt_at limit 1
        for update skip locked)
      returning notification_key, file_name, url, attempts, received_at, lease_token`;
    return job;
  }

  /** One attempt at one report: a run (B3), and the report's next state. */
  private async read(job: Job): Promise<void> {
    const { sql, topology, logger } = this.deps;
    const [run] = await sql<{ id: string }[]>`
      insert into payments.reconciliation_runs (scope, provider, kind, window_from, window_to)
      values (${topology.payments.stream}, ${provider}, ${kind}, now(), now())
      returning id`;
    const tally: Tally = { runId: Number(run.id), checked: 0, found: 0, applied: 0, errors: 0 };
    const renew = setInterval(
      () =>
        void sql`
          update payments.adyen_reports
          set leased_until = now() + ${this.options.leaseMs} * interval '1 millisecond'
          where scope = ${topology.payments.stream} and notification_key = ${job.notification_key}
            and lease_token = ${job.lease_token}`.catch(() => {}),
      Math.max(1000, Math.floor(this.options.leaseMs / 3)),
    );
    const log = { run_id: tally.runId, notification_id: job.notification_key, file: job.file_name };
    const started = performance.now();
    try {
      await this.download(job, tally);
      await this.finishRun(tally, true);
      await this.settle(job, tally.runId, { status: "done" });
      this.runs.inc({ provider, kind, outcome: "complete" });
      this.found.inc({ provider, kind }, tally.found);
      logger[tally.found > 0 ? "warn" : "info"]("adyen report compared", {
        ...log,
        checked: tally.checked,
        found: tally.found,
        applied: tally.applied,
        errors: tally.errors,
        duration_ms: Math.round(performance.now() - started),
      });
    } catch (error) {
      tally.errors++;
      if (this.stopped) {
        // O7: cut short by a shutdown: the next replica (or start) reads it again at once.
        await this.finishRun(tally, false).catch(() => {});
        await this.settle(job, tally.runId, {
          status: "due",
          retryInMs: 0,
          error: "cut short by a shutdown",
        });
        logger.info("adyen report cut short by a shutdown", log);
        return;
      }
      await this.finishRun(tally, true).catch(() => {});
      if (error instanceof ReportRefused) {
        this.skipped.inc({ provider, reason: error.reason });
        this.runs.inc({ provider, kind, outcome: "refused" });
        logger.warn("adyen report not read", {
          ...log,
          reason: error.reason,
          detail: error.message,
        });
        await this.settle(job, tally.runId, { status: "refused", error: error.message });
        return;
      }
      this.runs.inc({ provider, kind, outcome: "failed" });
      const message = error instanceof Error ? error.message : String(error);
      const givenUp =
        Date.now() - new Date(job.received_at).getTime() >= this.options.giveUpAfterMs;
      if (error instanceof DownloadRefused || givenUp) {
        logger.error("adyen report download failed for good", {
          ...log,
          attempts: job.attempts,
          detail: message,
        });
        await this.settle(job, tally.runId, { status: "failed", error: message });
        return;
      }
      const retryInMs = Math.min(
        this.options.retryMaxMs,
        this.options.retryBaseMs * 2 ** Math.max(0, job.attempts - 1),
      );
      logger.warn("adyen report download failed; tried again", {
        ...log,
        attempts: job.attempts,
        retry_in_ms: retryInMs,
        detail: message,
      });
      await this.settle(job, tally.runId, { status: "due", retryInMs, error: message });
    } finally {
      clearInterval(renew);
    }
  }

  /** Downloads the report and compares it as it arrives. */
  private async download(job: Job, tally: Tally): Promise<void> {
    const settings = this.deps.settings;
    if (!settings) throw new ReportRefused("not_configured", "ADYEN_REPORT_URL_PREFIX is not set");
    // B1: the credentials go only under the prefix; anything else is never asked for.
    if (!underPrefix(job.url, settings.urlPrefix))
      throw new ReportRefused(
        "url_outside_prefix",
        `the report URL is not under ADYEN_REPORT_URL_PREFIX (${originOf(job.url)})`,
      );
    const basic = Buffer.from(`${settings.username}:${settings.password}`).toString("base64");
    const signal = AbortSignal.any([
      this.abort.signal,
      AbortSignal.timeout(this.options.timeoutMs),
    ]);
    const response = await fetch(job.url, {
      headers: { authorization: `Basic ${basic}`, accept: "text/csv, */*" },
      // A redirect could lead the credentials out of the prefix: not followed.
      redirect: "manual",
      signal,
    });
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      const status = response.status;
      const detail = `Adyen answered ${status} to the download`;
      if (status >= 500 || status === 408 || status === 429) throw new Error(detail);
      throw new DownloadRefused(detail);
    }
    const length = Number(response.headers.get("content-length"));
    if (Number.isFinite(length) && length > this.options.maxBytes) {
      await response.body?.cancel().catch(() => {});
      throw new ReportRefused(
        "too_large",
        `the report is ${length} bytes, more than the ${this.options.maxBytes} read`,
      );
    }
    if (!response.body) throw new ReportRefused("malformed_report", "the answer has no body");
    try {
      await this.compare(job, response.body, tally);
    } catch (error) {
      // The rest of a report not read is not downloaded (and its connection not held).
      await response.body.cancel().catch(() => {});
      throw error;
    }
  }

  /** B1: reads the report's lines as they arrive, a batch compared and stored at a time. */
  private async compare(job: Job, body: ReadableStream<Uint8Array>, tally: Tally): Promise<void> {
    const reader = new CsvReader();
    let columns: ReportColumns | undefined;
    let header: string[] = [];
    let bytes = 0;
    let malformed = 0;
    const pending: { line: ReportLine; fields: string[] }[] = [];
    const take = async (records: ReturnType<CsvReader["push"]>) => {
      for (const record of records) {
        if (!columns) {
          const found = record.malformed
            ? "the header is malformed"
            : reportColumnsOf(record.fields);
          if (typeof found === "string") throw new ReportRefused("malformed_report", found);
          columns = found;
          header = record.fields.map((name) => name.trim());
          continue;
        }
        tally.checked++;
        const line = record.malformed ?? reportLineOf(record.fields, record.line, columns);
        if (line === undefined) continue;
        if (typeof line === "string") {
          tally.errors++;
          this.skipped.inc({ provider, reason: "malformed_line" });
          if (++malformed <= loggedMalformed)
            this.deps.logger.warn("adyen report line skipped", {
              run_id: tally.runId,
              file: job.file_name,
              line: record.line,
              reason: "malformed_line",
              detail: line,
            });
          continue;
        }
        if (line.bookedAt) {
          if (!tally.from || line.bookedAt < tally.from) tally.from = line.bookedAt;
          if (!tally.to || line.bookedAt > tally.to) tally.to = line.bookedAt;
        }
        // G4: another merchant account's money moves nothing here.
        if (!this.deps.merchantAccounts.includes(line.merchantAccount)) {
          this.skipped.inc({ provider, reason: "other_merchant_account" });
          continue;
        }
        pending.push({ line, fields: record.fields });
        if (pending.length >= batchLines) await this.store(job, pending.splice(0), header, tally);
      }
    };
    for await (const chunk of body) {
      bytes += chunk.byteLength;
      if (bytes > this.options.maxBytes)
        throw new ReportRefused(
          "too_large",
          `the report is more than the ${this.options.maxBytes} bytes read`,
        );
      await take(reader.push(chunk));
      // What arrived is stored before waiting for the rest.
      if (pending.length) await this.store(job, pending.splice(0), header, tally);
    }
    await take(reader.end());
    if (!columns) throw new ReportRefused("malformed_report", "the report is empty");
    if (pending.length) await this.store(job, pending.splice(0), header, tally);
    if (malformed > loggedMalformed)
      this.deps.logger.warn("adyen report lines skipped", {
        run_id: tally.runId,
        file: job.file_name,
        reason: "malformed_line",
        count: malformed,
      });
  }

  /**
   * B1: which of `lines` no stored notification explains, stored now. A line is explained by a
   * stored notification of its pspReference and event: Authorised by `AUTHORISATION` success of
   * the payment; Refunded by `REFUND` (or `CANCEL_OR_REFUND`) success of the refund's own
   * pspReference (without that column: any of the payment); Chargeback by `CHARGEBACK` (or
   * `SECOND_CHARGEBACK`) of the payment; and each by the line's own notification, stored by an
   * earlier report or attempt.
   */
  private async store(
    job: Job,
    batch: { line: ReportLine; fields: string[] }[],
    header: string[],
    tally: Tally,
  ): Promise<void> {
    const { sql, topology } = this.deps;
    const keysOf = (line: ReportLine) => {
      const move = reportMoves.get(line.recordType);
      const own = lineReference(line);
      return [
        `adyen:${lineNotification(line).id}`,
        ...(move?.explainedBy ?? []).map((event) => `adyen:${event}:${own}:true`),
      ];
    };
    /** Matched by the payment, not by an id: a chargeback, a refund without its own reference. */
    const byPayment = (line: ReportLine) =>
      line.recordType === "Chargeback" ||
      (line.recordType === "Refunded" && !line.modificationPspReference);
    const keys = batch.flatMap(({ line }) => keysOf(line));
    const payments = batch
      .filter(({ line }) => byPayment(line))
      .map(({ line }) => line.pspReference);
    const orders = batch
      .filter(({ line }) => byPayment(line))
      .map(({ line }) => lineNotification(line).orderId)
      .filter((id) => id !== null);
    const stored = await sql<{ key: string; event: string; payment_ref: string | null }[]>`
      select key, event, payment_ref from payments.notifications where key = any(${keys}::text[])
      union all
      select key, event, payment_ref from payments.notifications
      where order_id = any(${orders}::bigint[]) and provider = 'adyen'
        and payment_ref = any(${payments}::text[]) and key like '%:true'`;
    const storedKeys = new Set(stored.map((row) => row.key));
    const explained = (line: ReportLine) =>
      keysOf(line).some((key) => storedKeys.has(key)) ||
      (byPayment(line) &&
        stored.some(
          (row) =>
            row.payment_ref === line.pspReference &&
            reportMoves.get(line.recordType)?.explainedBy.includes(row.event),
        ));
    const missing = batch.filter(({ line }) => !explained(line));
    if (missing.length === 0) return;
    tally.found += missing.length;
    const host = URL.canParse(job.url) ? new URL(job.url).hostname : "adyen";
    const inputs: StoreInput[] = missing.map(({ line, fields }) => {
      const notification = lineNotification(line);
      return {
        provider,
        notification,
        rawBody: JSON.stringify({
          report: job.file_name,
          line: line.line,
          ...Object.fromEntries(header.map((name, i) => [name, fields[i] ?? ""])),
        }),
        sourceIp: host,
        traceparent: null,
        messageSubject: notificationSubject(notification, topology),
        source: "reconciliation",
      };
    });
    const result = await this.group.store(inputs);
    result.stored.forEach((fresh, i) => {
      if (!fresh) return;
      tally.applied++;
      const { notification } = inputs[i];
      this.deps.logger.warn("notification found by reconciliation", {
        run_id: tally.runId,
        provider,
        notification_id: `adyen:${notification.id}`,
        event: notification.event,
        order_id: notification.orderId,
        source: "reconciliation",
      });
    });
  }

  private async finishRun(tally: Tally, finished: boolean): Promise<void> {
    const from = tally.from?.toISOString() ?? null;
    const to = tally.to?.toISOString() ?? null;
    await this.deps.sql`
      update payments.reconciliation_runs set
        finished_at = case when ${finished}::boolean then now() end,
        window_from = coalesce(${from}::timestamptz, window_from),
        window_to = coalesce(${to}::timestamptz, window_to),
        checked = ${tally.checked}, found = ${tally.found}, applied = ${tally.applied},
        errors = ${tally.errors}
      where id = ${tally.runId}`;
  }

  /** The report's next state, recorded only by the lease's holder. */
  private async settle(
    job: Job,
    runId: number,
    next: { status: "done" | "refused" | "failed" | "due"; retryInMs?: number; error?: string },
  ): Promise<void> {
    const { sql, topology } = this.deps;
    await sql`
      update payments.adyen_reports set status = ${next.status}, last_error = ${next.error ?? null},
        run_id = ${runId},
        next_attempt_at = now() + ${next.retryInMs ?? 0} * interval '1 millisecond',
        leased_until = null, lease_token = null,
        finished_at = case when ${next.status} = 'due' then null else now() end
      where scope = ${topology.payments.stream} and notification_key = ${job.notification_key}
        and lease_token = ${job.lease_token}`;
  }
}

/** The URL's origin for a log line: never its path (which may name accounts) nor credentials. */
function originOf(url: string): string {
  return URL.canParse(url) ? new URL(url).origin : "not a URL";
}

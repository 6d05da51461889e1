import { basicAuth } from "@commerce/testing/provider-requests";
import {
  paymentAccountingReport,
  type ReportLineSpec,
  reportAvailable,
} from "@commerce/testing/providers/adyen-reports";
import type { Stats } from "./stats";
import type { ChaosSystem } from "./system";

/** How often the chaos run's Adyen publishes a payment accounting report (Adyen: daily). */
export const reportEveryMs = 30_000;

/**
 * B1 (v5), X5: Adyen's payment accounting report, as the local Adyen would write it: an
 * `Authorised` line for every payment it holds and a `Refunded` line (with the refund's own
 * pspReference as `Modification Psp Reference`) for every refund it made. Every `reportEveryMs`
 * (and once more when the workload ends) a report of everything so far is published on the local
 * report server and announced to payments with a signed `REPORT_AVAILABLE`, so payments downloads
 * it and stores each line no notification explains (the workload's Adyen payments whose
 * AUTHORISATION was never sent, a webhook endpoint failing as Adyen's would).
 */
export class AdyenReporting {
  private timer?: ReturnType<typeof setInterval>;
  private sending?: Promise<void>;

  constructor(
    private readonly system: ChaosSystem,
    private readonly stats: Stats,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.sending ??= this.publish().finally(() => {
        this.sending = undefined;
      });
    }, reportEveryMs);
  }

  /** Stops the timer and publishes the last report (the drain waits for what it finds). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.sending;
    await this.publish();
  }

  private lines(): ReportLineSpec[] {
    const { adyenApi } = this.system;
    const lines: ReportLineSpec[] = adyenApi.paymentList().map((p) => ({
      recordType: "Authorised",
      pspReference: p.pspReference,
      merchantReference: p.merchantReference,
      amount: p.value,
      currency: p.currency,
    }));
    for (const refund of adyenApi.refunds())
      if (refund.success)
        lines.push({
          recordType: "Refunded",
          pspReference: refund.paymentPspReference,
          merchantReference: refund.reference,
          amount: refund.value,
          currency: refund.currency,
          modificationPspReference: refund.pspReference,
        });
    return lines;
  }

  private async publish(): Promise<void> {
    const lines = this.lines();
    const name = `payments_accounting_report_chaos_${this.stats.reports.length + 1}_${Date.now()}.csv`;
    const url = this.system.adyenReports.publish(name, paymentAccountingReport(lines));
    const report = { at: Date.now(), lines: lines.length, status: "gave up" as number | string };
    this.stats.reports.push(report);
    const body = JSON.stringify(reportAvailable(name, url));
    // As Adyen sends a notification: again until 2xx, for up to two minutes.
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const status = await fetch(`${this.system.payments.url}/api/webhooks/adyen`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: basicAuth() },
        body,
        signal: AbortSignal.timeout(10_000),
      }).then(
        (response) => response.status,
        () => "connection error",
      );
      report.status = status;
      if (typeof status === "number" && status < 300) return;
      await Bun.sleep(2_000);
    }
  }
}

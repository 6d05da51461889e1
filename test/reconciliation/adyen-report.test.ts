import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually } from "@commerce/testing/basics";
import {
  adyenBatch,
  adyenItem,
  adyenRequest,
  signedItem,
} from "@commerce/testing/provider-requests";
import {
  paymentAccountingReport,
  type ReportLineSpec,
  reportAvailable,
  reportFileName,
  reportLine,
  startAdyenReports,
} from "@commerce/testing/providers/adyen-reports";
import { refundStackForFile } from "@commerce/testing/refund-stack";

setDefaultTimeout(30_000);

// Both services in-process, the local Adyen API and a local server of Adyen's report files; a
// download times out after 1 s, is tried again after 100 ms (doubling), and a report over 64 KiB
// is refused.
const reports = await startAdyenReports();
afterAll(() => reports.stop());
const stack = await refundStackForFile({
  env: reports.env,
  adyenReports: {
    intervalMs: 100,
    retryBaseMs: 100,
    retryMaxMs: 400,
    timeoutMs: 1000,
    maxBytes: 64 * 1024,
  },
});

const psp = () => String(Math.floor(Math.random() * 9e15) + 1e15);

/** Publishes `lines` as a report and sends its REPORT_AVAILABLE; answers the notification's key. */
async function deliverReport(
  lines: (ReportLineSpec | string)[] | string,
  options: { url?: string; live?: string; merchantAccountCode?: string } = {},
) {
  const fileName = reportFileName();
  const csv = typeof lines === "string" ? lines : paymentAccountingReport(lines);
  const url = options.url ?? reports.publish(fileName, csv);
  const built = adyenRequest(reportAvailable(fileName, url, options));
  const response = await fetch(`${stack.paymentsUrl}/api/webhooks/adyen`, {
    method: "POST",
    headers: built.headers,
    body: await built.text(),
  });
  return {
    fileName,
    key: `adyen:REPORT_AVAILABLE:${fileName}:true`,
    status: response.status,
    text: await response.text(),
  };
}

type Report = {
  status: string;
  attempts: number;
  last_error: string | null;
  run_id: number | null;
};

/** The report's job row once it is settled (not due). */
const settled = (key: string, timeoutMs = 15_000) =>
  eventually(
    async () => {
      const [row] = await stack.sql<Report[]>`
        select status, attempts, last_error, run_id::int as run_id from payments.adyen_reports
        where notification_key = ${key}`;
      return row && row.status !== "due" ? row : undefined;
    },
    timeoutMs,
    `report ${key} settled`,
  );

type Run = {
  kind: string;
  provider: string;
  checked: number;
  found: number;
  applied: number;
  errors: number;
  finished_at: string | null;
  window_from: string;
  window_to: string;
};

const runOf = async (id: number | null) =>
  (
    await stack.sql<Run[]>`
      select kind, provider, checked, found, applied, errors, finished_at::text,
        window_from::text, window_to::text
      from payments.reconciliation_runs where id = ${id}`
  )[0];

const timelineOf = async (orderId: number) =>
  stack.sql<{ type: string; source: string; notification_id: string | null }[]>`
    select type, source, notification_id from api.order_events where order_id = ${orderId}
    order by id`;

const reviewsOf = async (orderId: number) =>
  (
    await stack.sql<{ reason: string }[]>`
      select reason from api.payment_reviews where order_id = ${orderId}`
  ).map((row) => row.reason);

const storedKeys = async (like: string) =>
  (
    await stack.sql<{ key: string }[]>`
      select key from payments.notifications where key like ${like} order by key`
  ).map((row) => row.key);

const metric = async (line: string) => {
  const text = await (await fetch(`${stack.paymentsUrl}/metrics`)).text();
  const found = text.split("\n").find((l) => l.startsWith(line));
  return found ? Number(found.split(" ").pop()) : 0;
};

describe("Adyen's payment accounting report (B1)", () => {
  test("B1: a payment whose AUTHORISATION never arrived is in the report: the order is paid (source reconciliation); the late webhook pays nothing twice", async () => {
    const orderId = await stack.placeOrder(2300);
    const payment = stack.adyenApi.payment(2300, "USD", orderId);
    const started = performance.now();
    const delivered = await deliverReport([
      {
        recordType: "Received",
        pspReference: payment.pspReference,
        merchantReference: orderId,
        amount: 2300,
      },
      {
        recordType: "Authorised",
        pspReference: payment.pspReference,
        merchantReference: orderId,
        amount: 2300,
      },
    ]);
    expect(delivered.status).toBe(200);
    expect(delivered.text).toBe("[accepted]");
    await stack.paidBecomes(orderId);
    const ms = Math.round(performance.now() - started);
    console.log(`B1 Adyen: REPORT_AVAILABLE sent -> order paid in ${ms} ms`);

    const key = `adyen:report:Authorised:${payment.pspReference}`;
    const [stored] = await stack.sql`
      select event, order_id::int, payment_ref, amount::int, currency, source
      from payments.notifications where key = ${key}`;
    expect(stored).toEqual({
      source: "reconciliation",
      event: "Authorised",
      order_id: orderId,
      payment_ref: payment.pspReference,
      amount: 2300,
      currency: "USD",
    });
    const report = await settled(delivered.key);
    expect(report.status).toBe("done");
    const run = await runOf(report.run_id);
    expect(run).toMatchObject({
      kind: "report",
      provider: "adyen",
      checked: 2,
      found: 1,
      applied: 1,
      errors: 0,
    });
    expect(run.finished_at).not.toBeNull();

    // The webhook Adyen was still retrying arrives now: stored, but the order is paid once.
    const late = signedItem(
      adyenItem(orderId, {
        pspReference: payment.pspReference,
        amount: { currency: "USD", value: 2300 },
      }),
    );
    expect(await stack.deliver(adyenRequest(adyenBatch([late])))).toBe(200);
    await eventually(async () => {
      const [row] = await stack.sql`
        select 1 from api.processed_notifications
        where notification_id = ${`adyen:AUTHORISATION:${payment.pspReference}:true`}`;
      return row ? true : undefined;
    });
    const paid = (await timelineOf(orderId)).filter((e) => e.type === "paid");
    expect(paid).toHaveLength(1);
    expect(paid[0].notification_id).toBe(key);
    expect(paid[0].source).toBe("reconciliation");
    expect(await reviewsOf(orderId)).toEqual([]);
    expect(await stack.statusOf(orderId)).toBe("paid");
  });

  test("B1, B3: a line a stored notification explains makes nothing new; the report's run lists it checked, nothing found", async () => {
    const { orderId, paymentRef } = await stack.paidThroughAdyen(1800);
    const delivered = await deliverReport([
      {
        recordType: "Authorised",
        pspReference: paymentRef,
        merchantReference: orderId,
        amount: 1800,
      },
      {
        recordType: "SentForSettle",
        pspReference: paymentRef,
        merchantReference: orderId,
        amount: 1800,
      },
      { recordType: "Settled", pspReference: paymentRef, merchantReference: orderId, amount: 1800 },
    ]);
    const report = await settled(delivered.key);
    expect(report.status).toBe("done");
    expect(await runOf(report.run_id)).toMatchObject({
      checked: 3,
      found: 0,
      applied: 0,
      errors: 0,
    });
    expect(await storedKeys(`adyen:report:%:${paymentRef}`)).toEqual([]);
    const listed = await fetch(`${stack.paymentsUrl}/api/reconciliation/runs`, {
      headers: { authorization: `Bearer ${stack.admin}` },
    });
    expect(listed.status).toBe(200);
    const runs = ((await listed.json()) as { items: ({ id: number } & Run)[] }).items;
    expect(runs.find((r) => r.id === report.run_id)).toMatchObject({
      provider: "adyen",
      kind: "report",
      checked: 3,
      found: 0,
    });
  });

  test("B1, L4: a Refunded line for a refund made in Adyen's Customer Area refunds the order", async () => {
    const { orderId, paymentRef } = await stack.paidThroughAdyen(2100);
    const refund = stack.adyenApi.refundElsewhere(paymentRef, 2100);
    const delivered = await deliverReport([
      {
        recordType: "Refunded",
        pspReference: paymentRef,
        modificationPspReference: refund.pspReference,
        merchantReference: orderId,
        amount: 2100,
      },
    ]);
    expect(delivered.status).toBe(200);
    await eventually(async () =>
      (await stack.statusOf(orderId)) === "refunded" ? true : undefined,
    );
    expect(await storedKeys(`adyen:report:Refunded:${refund.pspReference}`)).toHaveLength(1);
    const refunded = (await timelineOf(orderId)).filter((e) => e.type === "refunded");
    expect(refunded).toHaveLength(1);
    expect(refunded[0].notification_id).toBe(`adyen:report:Refunded:${refund.pspReference}`);
  });

  test("B1, F3: a Refunded line for the shop's refund whose REFUND notification never came: the refund succeeds, never a second refund", async () => {
    const { orderId, paymentRef } = await stack.paidThroughAdyen(2600);
    stack.adyenApi.notifications = false;
    try {
      const asked = await stack.call("POST", `/api/orders/${orderId}/refunds`, {
        body: { note: "report confirms" },
      });
      expect(asked.status).toBe(202);
      const refundId = asked.json.refund_id as number;
      await stack.refundBecomes(orderId, refundId, "pending");
      const [made] = stack.adyenApi.refunds(paymentRef);
      await deliverReport([
        {
          recordType: "Refunded",
          pspReference: paymentRef,
          modificationPspReference: made.pspReference,
          merchantReference: orderId,
          amount: 2600,
        },
      ]);
      const done = await stack.refundBecomes(orderId, refundId, "succeeded");
      expect(done.provider_refund_id).toBe(made.pspReference);
      await eventually(async () =>
        (await stack.statusOf(orderId)) === "refunded" ? true : undefined,
      );
      expect(stack.adyenApi.refunds(paymentRef)).toHaveLength(1);
      expect((await timelineOf(orderId)).filter((e) => e.type === "refunded")).toHaveLength(1);
      expect(await reviewsOf(orderId)).toEqual([]);
    } finally {
      stack.adyenApi.notifications = true;
    }
  });

  test("B1, L5: a Chargeback line no notification explained makes a lost dispute of the order's payment", async () => {
    const { orderId, paymentRef } = await stack.paidThroughAdyen(3100);
    const chargeback = psp();
    await deliverReport([
      {
        recordType: "Chargeback",
        pspReference: paymentRef,
        modificationPspReference: chargeback,
        merchantReference: orderId,
        amount: 3100,
      },
    ]);
    const dispute = await eventually(async () =>
      (await timelineOf(orderId)).find((e) => e.type.startsWith("dispute")),
    );
    expect(dispute.notification_id).toBe(`adyen:report:Chargeback:${chargeback}`);
    expect(await reviewsOf(orderId)).toContain("dispute");
  });
});

describe("reports not read (B1, G4)", () => {
  test("B1: a report URL outside ADYEN_REPORT_URL_PREFIX is never fetched: a log line, a count, the run's error", async () => {
    const before = await metric(
      'reconciliation_skipped_total{provider="adyen",reason="url_outside_prefix"}',
    );
    const fileName = reportFileName();
    reports.publish(fileName, paymentAccountingReport([]));
    const outside = `${reports.url}/reports/download/MerchantAccount/OtherShop/${fileName}`;
    const delivered = await deliverReport([], { url: outside });
    expect(delivered.status).toBe(200);
    const report = await settled(delivered.key);
    expect(report.status).toBe("refused");
    expect(await runOf(report.run_id)).toMatchObject({ checked: 0, found: 0, errors: 1 });
    expect(reports.downloads(fileName)).toEqual([]);
    expect(reports.downloads(delivered.fileName)).toEqual([]);
    expect(
      await metric('reconciliation_skipped_total{provider="adyen",reason="url_outside_prefix"}'),
    ).toBe(before + 1);
    expect(stack.paymentsLog.join("\n")).toContain("url_outside_prefix");
    // N9: a reason PostgreSQL could not store is no URL: accepted, never fetched.
    const nul = await deliverReport([], { url: `${reports.prefix}x\u0000.csv` });
    expect(nul).toMatchObject({ status: 200, text: "[accepted]" });
    expect((await settled(nul.key)).last_error).toContain("not under ADYEN_REPORT_URL_PREFIX");
  });

  test("B1, G4: a line of another merchant account moves nothing, nor one naming an order that is not the shop's; a report of the other PAYMENT_MODE is never fetched", async () => {
    const orderId = await stack.placeOrder(1200);
    const payment = stack.adyenApi.payment(1200, "USD", orderId);
    const line = {
      recordType: "Authorised",
      pspReference: payment.pspReference,
      merchantReference: orderId,
      amount: 1200,
    };
    const other = await deliverReport([{ ...line, merchantAccount: "SomeoneElseECOM" }]);
    const report = await settled(other.key);
    expect(await runOf(report.run_id)).toMatchObject({ checked: 1, found: 0, applied: 0 });
    // A line of the shop's account naming no order of the shop: stored, and it moves nothing.
    const noSuchOrder = 9_000_000_000 + orderId;
    const stray = psp();
    const strayReport = await deliverReport([
      {
        recordType: "Authorised",
        pspReference: stray,
        merchantReference: noSuchOrder,
        amount: 1200,
      },
    ]);
    expect((await settled(strayReport.key)).status).toBe("done");
    await eventually(async () => {
      const [row] = await stack.sql`
        select outcome from api.processed_notifications
        where notification_id = ${`adyen:report:Authorised:${stray}`}`;
      return row ? true : undefined;
    });
    expect(await stack.sql`select 1 from api.orders where id = ${noSuchOrder}`).toHaveLength(0);
    expect(await stack.statusOf(orderId)).toBe("created");
    const live = await deliverReport([line], { live: "true" });
    expect(live.status).toBe(200);
    await Bun.sleep(300);
    expect(reports.downloads(live.fileName)).toEqual([]);
    expect(
      await stack.sql`select 1 from payments.adyen_reports where notification_key = ${live.key}`,
    ).toHaveLength(0);
    expect(await storedKeys(`adyen:report:%:${payment.pspReference}`)).toEqual([]);
    expect(await stack.statusOf(orderId)).toBe("created");
  });

  test("B1: malformed lines are skipped, logged and counted, the others applied; a report that is not one is refused; nothing moved by either", async () => {
    const orderId = await stack.placeOrder(1500);
    const payment = stack.adyenApi.payment(1500, "USD", orderId);
    const strangerOrder = await stack.placeOrder(1500);
    const good = reportLine({
      recordType: "Authorised",
      pspReference: payment.pspReference,
      merchantReference: orderId,
      amount: 1500,
    });
    const bad = [
      reportLine({
        recordType: "Authorised",
        pspReference: "not:a:psp",
        merchantReference: strangerOrder,
        amount: 1500,
      }),
      reportLine({
        recordType: "Authorised",
        pspReference: psp(),
        merchantReference: strangerOrder,
        amount: 1500,
      }).replace(",15.00,", ",fifteen,"),
      `ShopCompany,Shop"ECOM,${psp()},${strangerOrder},visa`,
      "too,few,fields",
    ];
    // A quote never closed swallows the rest of the file: it comes last.
    const unclosed = `ShopCompany,ShopECOM,${psp()},"${strangerOrder},visa`;
    const before = await metric(
      'reconciliation_skipped_total{provider="adyen",reason="malformed_line"}',
    );
    const delivered = await deliverReport([...bad, good, unclosed]);
    const report = await settled(delivered.key);
    expect(report.status).toBe("done");
    expect(await runOf(report.run_id)).toMatchObject({
      checked: 6,
      found: 1,
      applied: 1,
      errors: 5,
    });
    await stack.paidBecomes(orderId);
    expect(await stack.statusOf(strangerOrder)).toBe("created");
    expect(
      await metric('reconciliation_skipped_total{provider="adyen",reason="malformed_line"}'),
    ).toBe(before + 5);
    expect(stack.paymentsLog.join("\n")).toContain("adyen report line skipped");

    const garbage = await deliverReport("this is not,a report\n\u0000\u0001 at all\n");
    const refused = await settled(garbage.key);
    expect(refused.status).toBe("refused");
    expect(refused.last_error).toContain("header");
    expect((await runOf(refused.run_id)).errors).toBe(1);
  });

  test("B1: a report larger than the limit is refused before it is read: logged, counted, nothing moved", async () => {
    const orderId = await stack.placeOrder(1700);
    const payment = stack.adyenApi.payment(1700, "USD", orderId);
    const filler = reportLine({
      recordType: "Received",
      pspReference: psp(),
      merchantReference: 1,
      amount: 1,
    });
    const lines: string[] = [
      reportLine({
        recordType: "Authorised",
        pspReference: payment.pspReference,
        merchantReference: orderId,
        amount: 1700,
      }),
      ...Array.from({ length: 1000 }, () => filler),
    ];
    const before = await metric(
      'reconciliation_skipped_total{provider="adyen",reason="too_large"}',
    );
    const delivered = await deliverReport(lines);
    const report = await settled(delivered.key);
    expect(report.status).toBe("refused");
    expect(report.last_error).toContain("bytes");
    expect(await metric('reconciliation_skipped_total{provider="adyen",reason="too_large"}')).toBe(
      before + 1,
    );
    expect(await stack.statusOf(orderId)).toBe("created");
    expect(await storedKeys(`adyen:report:%:${payment.pspReference}`)).toEqual([]);
  });
});

describe("downloads that fail (B1, B4)", () => {
  test("B1, B4: a download answered 503, then timing out, then OK is tried again with a back-off and processed once", async () => {
    const orderId = await stack.placeOrder(1900);
    const payment = stack.adyenApi.payment(1900, "USD", orderId);
    const failedRuns = 'reconciliation_runs_total{provider="adyen",kind="report",outcome="failed"}';
    const failedBefore = await metric(failedRuns);
    reports.fail({ kind: "status", status: 503 }, { kind: "timeout", ms: 2000 });
    const delivered = await deliverReport([
      {
        recordType: "Authorised",
        pspReference: payment.pspReference,
        merchantReference: orderId,
        amount: 1900,
      },
    ]);
    const report = await settled(delivered.key);
    expect(report).toMatchObject({ status: "done", attempts: 3 });
    expect(reports.downloads(delivered.fileName)).toHaveLength(3);
    expect(await metric(failedRuns)).toBe(failedBefore + 2);
    await stack.paidBecomes(orderId);
    const runs = await stack.sql<{ errors: number; applied: number; finished: boolean }[]>`
      select errors, applied, finished_at is not null as finished from payments.reconciliation_runs
      where scope = ${stack.topology.payments.stream} and kind = 'report' and id <= ${report.run_id}
      order by id desc limit 3`;
    expect(runs.map((r) => [r.errors, r.applied, r.finished])).toEqual([
      [0, 1, true],
      [1, 0, true],
      [1, 0, true],
    ]);
    // Adyen sends the notification again: the report is not read again.
    const again = adyenRequest(
      reportAvailable(delivered.fileName, `${reports.prefix}${delivered.fileName}`),
    );
    expect(await stack.deliver(again)).toBe(200);
    await Bun.sleep(300);
    expect(reports.downloads(delivered.fileName)).toHaveLength(3);
    expect((await timelineOf(orderId)).filter((e) => e.type === "paid")).toHaveLength(1);
  });

  test("B1, B4: the report server down (connection refused), then back: the report is read once it answers", async () => {
    const orderId = await stack.placeOrder(2200);
    const payment = stack.adyenApi.payment(2200, "USD", orderId);
    await reports.down();
    const fileName = reportFileName();
    const url = reports.publish(
      fileName,
      paymentAccountingReport([
        {
          recordType: "Authorised",
          pspReference: payment.pspReference,
          merchantReference: orderId,
          amount: 2200,
        },
      ]),
    );
    const first = adyenRequest(reportAvailable(fileName, url));
    const send = async (request: Request) =>
      fetch(`${stack.paymentsUrl}/api/webhooks/adyen`, {
        method: "POST",
        headers: request.headers,
        body: await request.text(),
      });
    expect((await send(first)).status).toBe(200);
    const key = `adyen:REPORT_AVAILABLE:${fileName}:true`;
    await eventually(async () => {
      const [row] = await stack.sql<{ attempts: number }[]>`
        select attempts from payments.adyen_reports where notification_key = ${key}`;
      return row && row.attempts >= 2 ? true : undefined;
    });
    // Adyen sends the notification again meanwhile: one report, one job.
    expect((await send(adyenRequest(reportAvailable(fileName, url)))).status).toBe(200);
    await reports.up();
    const report = await settled(key);
    expect(report.status).toBe("done");
    await stack.paidBecomes(orderId);
    expect(reports.downloads(fileName)).toHaveLength(1);
    expect(
      await stack.sql`select 1 from payments.adyen_reports where notification_key = ${key}`,
    ).toHaveLength(1);
    expect(stack.paymentsLog.join("\n")).not.toContain(reports.env.ADYEN_REPORT_PASSWORD);
  });
});

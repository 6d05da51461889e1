import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { eventually } from "@commerce/testing/basics";
import { startStack } from "@commerce/testing/processes";
import { adyenRequest, providersEnv } from "@commerce/testing/provider-requests";
import {
  paymentAccountingReport,
  reportAvailable,
  reportFileName,
  startAdyenReports,
} from "@commerce/testing/providers/adyen-reports";

setDefaultTimeout(120_000);

// Both services as processes; Adyen's report files on a local server payments downloads from.
const reports = await startAdyenReports();
const stack = await startStack({ env: { ...providersEnv, ...reports.env } });
afterAll(async () => {
  await stack.stop();
  await reports.stop();
});

const psp = () => String(Math.floor(Math.random() * 9e15) + 1e15);

test("B1: payments SIGKILLed halfway through a report reads it again after a restart: every order paid once, nothing stored twice", async () => {
  const orders = [];
  for (let i = 0; i < 30; i++) orders.push(await stack.newOrder(1000 + i));
  const lines = orders.map((order) => ({
    recordType: "Authorised",
    pspReference: psp(),
    merchantReference: order.order_id,
    amount: order.amount,
    currency: order.currency,
  }));
  const fileName = reportFileName();
  const url = reports.publish(fileName, paymentAccountingReport(lines));
  // The first half of the file arrives, then the download hangs: payments has stored part of it.
  reports.fail({ kind: "stall" });
  const built = adyenRequest(reportAvailable(fileName, url));
  const answer = await fetch(`${stack.payments.url}/api/webhooks/adyen`, {
    method: "POST",
    headers: built.headers,
    body: await built.text(),
  });
  expect(answer.status).toBe(200);
  const keys = lines.map((line) => `adyen:report:Authorised:${line.pspReference}`);
  const storedCount = async () =>
    Number(
      (
        await stack.sql`select count(*)::int as n from payments.notifications where key = any(${keys})`
      )[0].n,
    );
  await eventually(async () => ((await storedCount()) > 0 ? true : undefined));
  await Bun.sleep(300);
  await stack.payments.stop("SIGKILL");
  const before = await storedCount();
  expect(before).toBeGreaterThan(0);
  expect(before).toBeLessThan(lines.length);
  const key = `adyen:REPORT_AVAILABLE:${fileName}:true`;
  const [leased] = await stack.sql`
    select status, leased_until is not null as leased from payments.adyen_reports
    where notification_key = ${key}`;
  expect(leased).toEqual({ status: "due", leased: true });
  // The dead worker's lease would expire on its own (a minute); the test does not wait for it.
  await stack.sql`update payments.adyen_reports set leased_until = null where notification_key = ${key}`;
  reports.release();
  await stack.payments.start();

  for (const order of orders) await stack.paid(order.order_id);
  expect(await storedCount()).toBe(lines.length);
  const [paidEvents] = await stack.sql`
    select count(*)::int as n from api.order_events
    where type = 'paid' and order_id = any(${orders.map((o) => o.order_id)})`;
  expect(paidEvents.n).toBe(lines.length);
  const [report] = await stack.sql`
    select status, attempts from payments.adyen_reports where notification_key = ${key}`;
  expect(report).toEqual({ status: "done", attempts: 2 });
  const runs = await stack.sql<{ finished: boolean; found: number; applied: number }[]>`
    select finished_at is not null as finished, found, applied from payments.reconciliation_runs
    where scope = (select scope from payments.adyen_reports where notification_key = ${key})
      and kind = 'report' order by id`;
  // The killed run never finished; the next found only what the first had not stored.
  expect(runs.map((r) => r.finished)).toEqual([false, true]);
  expect(runs[1]).toMatchObject({ found: lines.length - before, applied: lines.length - before });
  expect(reports.downloads(fileName)).toHaveLength(2);
});

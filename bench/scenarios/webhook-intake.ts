/**
 * The webhook row: POST /api/webhooks/payment with unique signed notifications, on a payments
 * process of its own (its messages reach no consumer), in rounds sized from the last one's rate.
 */
import { rmSync } from "node:fs";
import { runDir, runId, settings, sql, wrk } from "../context";
import { writeSignedNotifications } from "../data";
import { type Service, say, threads } from "../harness";
import { checkClean, type WrkRun } from "../load";

type WebhookRun = WrkRun & { sent: number; stored: number };

async function webhookRound(payments: Service, label: string, count: number, duration: number) {
  const idPrefix = `bench${runId}${label}-`;
  const file = writeSignedNotifications(`${runDir}/webhook-${label}.txt`, idPrefix, count);
  const run = await wrk(payments, "webhook.lua", [file, String(threads)], {
    connections: settings.webhookConnections,
    duration,
  });
  rmSync(file);
  const [{ stored }] = await sql<{ stored: number }[]>`
    select count(*)::int as stored from payments.notifications where id like ${`${idPrefix}%`}`;
  return { ...run, sent: count, stored };
}

/** A warm-up, then `rounds` measured rounds, each with twice the notifications it should need. */
export async function measureWebhookIntake(payments: Service): Promise<WebhookRun[]> {
  const { rounds, seconds } = settings;
  await webhookRound(payments, "w0", 20_000, 4);
  const runs: WebhookRun[] = [];
  let expectedRate = 5000;
  for (let round = 1; round <= rounds; round++) {
    const count = Math.max(20_000, Math.ceil(expectedRate * seconds * 2));
    const run = await webhookRound(payments, `w${round}`, count, seconds);
    expectedRate = run.rps;
    runs.push(run);
    say(`webhook round ${round}: ${run.rps} req/s, p99 ${run.p99_ms} ms, ${run.stored} stored`);
    if (run.requests > count) say(`WARNING webhook round ${round} ran out of unique notifications`);
  }
  checkClean(runs, "webhook.lua");
  return runs;
}

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { eventually } from "@commerce/testing/basics";
import { type Stack, startStack } from "@commerce/testing/processes";
import { loopbackWebhooks, webhookEndpoints } from "@commerce/testing/webhook-endpoints";
import type { Answer } from "@commerce/testing/webhook-receiver";

setDefaultTimeout(120_000);

// H9, N15: receivers whose answers are not text, against a listening api: each attempt is
// recorded with its status and first KiB as readable text, and follows H3's schedule.
let stack: Stack;
// The endpoints go at the end: left enabled in the shared database, they would take a delivery of
// every order any later test makes.
const hooks = webhookEndpoints(
  () => stack.sql,
  (body) => stack.callApi("POST", "/api/webhook-endpoints", stack.admin, body),
);
beforeAll(async () => {
  stack = await startStack({
    env: {
      ...loopbackWebhooks,
      WEBHOOK_RETRY_SCHEDULE: "1,1",
      WEBHOOK_TIMEOUT_SECONDS: "5",
    },
  });
});
afterAll(async () => {
  await hooks.clear();
  await stack?.stop();
});

async function endpoint(answer: () => Answer) {
  const receiver = await hooks.receiver(answer);
  const { id } = await hooks.subscribe(receiver.url, ["orders.created"]);
  return { receiver, id };
}

type Attempt = { status_code: number | null; error: string | null; response_body: string | null };
const attemptsOf = (endpointId: number) =>
  stack.sql<(Attempt & { delivery: string; attempts: number })[]>`
    select a.status_code, a.error, a.response_body, d.status as delivery, d.attempts
    from api.webhook_attempts a join api.webhook_deliveries d on d.id = a.delivery_id
    where d.endpoint_id = ${endpointId} order by a.id`;

describe("webhook answers that are not text", () => {
  test("H9, N15: NUL, gzip and endless answers are recorded as readable text and follow the schedule; other endpoints get each event once", async () => {
    const nul = await endpoint(() => ({
      status: 200,
      body: new Uint8Array([0x6f, 0x6b, 0, 0, 0xff]),
    }));
    const gzip = await endpoint(() => ({
      status: 500,
      body: gzipSync("busy"),
      headers: { "content-encoding": "gzip" },
    }));
    const endless = await endpoint(() => ({ status: 200, endless: true }));
    const healthy = await Promise.all([1, 2, 3].map(() => endpoint(() => ({ status: 200 }))));

    const orders = [await stack.newOrder(), await stack.newOrder()];

    // NUL: a 200 is a success, recorded once, its bytes shown escaped (invalid UTF-8 as U+FFFD).
    const [nulAttempt] = await eventually(async () => {
      const rows = await attemptsOf(nul.id);
      return rows.length === 2 ? rows : undefined;
    });
    expect(nulAttempt).toMatchObject({ status_code: 200, error: null, delivery: "succeeded" });
    expect(nulAttempt.response_body).toBe("ok\\x00\\x00\uFFFD");

    // gzip with a 500: the schedule's two retries, then failed; every attempt recorded.
    const gzipAttempts = await eventually(async () => {
      const rows = await attemptsOf(gzip.id);
      return rows.length === 6 && rows.every((r) => r.delivery === "failed") ? rows : undefined;
    }, 30_000);
    for (const attempt of gzipAttempts) {
      expect(attempt.status_code).toBe(500);
      expect(attempt.response_body?.startsWith("\\x1f\uFFFD\\x08")).toBe(true);
    }
    expect(gzip.receiver.received.length).toBe(6);

    // Endless: the status and the first KiB, read with a cap.
    const endlessAttempts = await eventually(async () => {
      const rows = await attemptsOf(endless.id);
      return rows.length === 2 ? rows : undefined;
    });
    for (const attempt of endlessAttempts) {
      expect(attempt).toMatchObject({ status_code: 200, error: null, delivery: "succeeded" });
      expect(attempt.response_body?.startsWith("\\x00BC\\x00EF")).toBe(true);
      expect(attempt.response_body?.replaceAll("\\x00", "_").length).toBe(1024);
    }

    // Healthy endpoints: each event exactly once, recorded as succeeded.
    for (const { receiver, id } of healthy) {
      await eventually(async () => ((await attemptsOf(id)).length === 2 ? true : undefined));
      const ids = receiver.received.map((r) => r.id).sort();
      expect(ids).toEqual(orders.map((o) => `order-created-${o.order_id}`).sort());
    }
    // And nothing is sent again later.
    await Bun.sleep(3000);
    expect(nul.receiver.received.length).toBe(2);
    expect(endless.receiver.received.length).toBe(2);
    for (const { receiver } of healthy) expect(receiver.received.length).toBe(2);
  });
});

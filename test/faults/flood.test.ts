import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { signPayload } from "@commerce/shared/contract/signature";
import { webhookSecret } from "@commerce/testing/basics";
import { type PlacedOrder, type ServiceProcess, succeeded } from "@commerce/testing/processes";
import { recordFigures } from "./figures";
import { type Delivery, Provider } from "./provider";
import {
  type FaultStack,
  paidOnce,
  placeOrders,
  seconds,
  settle,
  startFaultStack,
  tableCounts,
} from "./support";

setDefaultTimeout(120_000);

let env: FaultStack;
let targets: PlacedOrder[];
beforeAll(async () => {
  env = await startFaultStack();
  // Real unpaid orders with their right amounts: a forged notification that got through would pay one.
  targets = await placeOrders(env.stack, 20);
});
afterAll(() => env?.dispose());

const floodSize = 5000;
const inFlight = 64;

/** The ways a forger gets the X-Signature wrong, in turn. */
function forged(n: number): { body: string; signature?: string } {
  const order = targets[n % targets.length];
  const body = JSON.stringify(succeeded(order));
  const now = Math.floor(Date.now() / 1000);
  switch (n % 5) {
    case 0:
      return { body, signature: signPayload(body, "whsec_guessed", now) };
    case 1:
      return { body };
    case 2:
      return { body, signature: signPayload(body, webhookSecret, now - 3600) };
    case 3:
      return { body, signature: `t=${now},v1=${"0".repeat(64)}` };
    default:
      return {
        body: body.replace(`"amount":${order.amount}`, `"amount":${order.amount - 1}`),
        signature: signPayload(body, webhookSecret, now),
      };
  }
}

type FloodResult = {
  statuses: Record<string, number>;
  latencies: number[];
  seconds: number;
  genuine: Delivery;
};

/**
 * `floodSize` forged notifications, `inFlight` at a time from this process, and one genuine
 * notification from the provider once a fifth of the flood has been answered.
 */
async function flood(payments: ServiceProcess, order: PlacedOrder): Promise<FloodResult> {
  const statuses: Record<string, number> = {};
  const latencies: number[] = [];
  const provider = new Provider(payments.url);
  let sent = 0;
  let genuine: Promise<Delivery> | undefined;
  const startedAt = performance.now();
  const worker = async () => {
    while (sent < floodSize) {
      const n = sent++;
      if (n === floodSize / 5)
        genuine = provider.deliver(succeeded(order), { maxAttempts: 20, withinMs: 60_000 });
      const { body, signature } = forged(n);
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (signature) headers["x-signature"] = signature;
      const sentAt = performance.now();
      let status: string;
      try {
        const response = await fetch(`${payments.url}/api/webhooks/payment`, {
          method: "POST",
          headers,
          body,
          signal: AbortSignal.timeout(10_000),
        });
        await response.arrayBuffer();
        status = String(response.status);
      } catch {
        status = "connection error";
      }
      latencies.push(performance.now() - sentAt);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const floodSeconds = seconds(startedAt);
  return {
    statuses,
    latencies,
    seconds: floodSeconds,
    genuine: await (genuine as Promise<Delivery>),
  };
}

const percentile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]);
};

async function floodAndSettle(
  scenario: string,
  rules: string,
  payments: ServiceProcess,
  limiter: string,
) {
  const { stack } = env;
  const [order] = await placeOrders(stack, 1);
  const before = await tableCounts(stack);
  const result = await flood(payments, order);
  const outcome = await settle(stack, [result.genuine], before);
  recordFigures(scenario, {
    rules,
    requests: floodSize + result.genuine.attempts.length,
    faults: `${floodSize} forged notifications, ${inFlight} in flight; rate limiter ${limiter}`,
    notifications: 1,
    accepted: outcome.accepted,
    lost: outcome.lost,
    applied_twice: outcome.appliedTwice,
    seconds: result.seconds,
    forged_answers: result.statuses,
    forged_per_second: Math.round(floodSize / result.seconds),
    forged_p50_ms: percentile(result.latencies, 0.5),
    forged_p99_ms: percentile(result.latencies, 0.99),
    forged_max_ms: percentile(result.latencies, 1),
    genuine_attempts: result.genuine.attempts.length,
  });
  return { ...result, outcome };
}

describe("forged flood", () => {
  test("W2, W7, W1: with the rate limiter off, 5000 forged notifications at 64 in flight are all 401, quickly, and touch no table; a genuine one sent during the flood is accepted at once and applied", async () => {
    // The stack runs payments with RATE_LIMIT_RPS=0, so every forged request reaches the
    // signature check: this measures what a forged request costs when nothing stops it earlier.
    const result = await floodAndSettle(
      "forged flood, limiter off",
      "W1 W2 W7",
      env.stack.payments,
      "off (RATE_LIMIT_RPS=0)",
    );
    expect(result.statuses).toEqual({ "401": floodSize });
    expect(percentile(result.latencies, 0.99)).toBeLessThan(1_000);
    expect(result.genuine.accepted).toBe(true);
    expect(result.genuine.attempts).toHaveLength(1);
    expect(result.outcome.lost).toBe(0);
    expect(result.outcome.appliedTwice).toBe(0);
    expect(result.outcome.changed).toEqual(paidOnce(1));
  });

  test("W7, W2, W1: with the shipped per-IP limit (100/s, burst 200), the flood from the provider's own IP is answered 429 or 401 and touches no table; the genuine one, retried as a provider does, is accepted and applied", async () => {
    // The flood and the genuine provider share 127.0.0.1, so they share one token bucket: the
    // genuine notification is refused with 429 while the flood drains the bucket, and gets
    // through on a retry (honouring Retry-After), as a provider's retries would in production.
    const limited = await env.stack.replica("payments", {
      RATE_LIMIT_RPS: "100",
      RATE_LIMIT_BURST: "200",
    });
    const result = await floodAndSettle(
      "forged flood, limiter on",
      "W1 W2 W7",
      limited,
      "100/s, burst 200 per source IP (the defaults)",
    );
    expect(Object.keys(result.statuses).sort()).toEqual(["401", "429"]);
    expect(result.statuses["429"]).toBeGreaterThan(floodSize / 2);
    expect(percentile(result.latencies, 0.99)).toBeLessThan(1_000);
    expect(result.genuine.accepted).toBe(true);
    expect(result.outcome.lost).toBe(0);
    expect(result.outcome.appliedTwice).toBe(0);
    expect(result.outcome.changed).toEqual(paidOnce(1));
  });
});

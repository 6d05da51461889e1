import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { type ServiceProcess, succeeded } from "@commerce/testing/processes";
import { recordFigures } from "./figures";
import { Provider } from "./provider";
import { faultStackForFile, paidOnce, placeOrders, seconds, settle, tableCounts } from "./support";

setDefaultTimeout(120_000);

const env = await faultStackForFile();

/** How many orders this replica's consumer paid, from its own /metrics (O3). */
async function paidBy(replica: ServiceProcess): Promise<number> {
  const metrics = await (await fetch(`${replica.url}/metrics`)).text();
  const line = metrics.split("\n").find((l) => /^payment_messages_total\{.*outcome="paid"/.test(l));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

describe("api replicas", () => {
  test("M4, M2, R5: three api replicas share the durable consumer; 150 notifications are each applied once, with one orders.paid", async () => {
    const { stack } = env;
    const replicas = [stack.api, await stack.replica("api"), await stack.replica("api")];
    const orders = await placeOrders(stack, 150);
    const before = await tableCounts(stack);
    const provider = new Provider(stack.payments.url);
    const startedAt = performance.now();
    const deliveries = await provider.deliverAll(
      orders.map((order) => succeeded(order)),
      16,
    );
    const outcome = await settle(stack, deliveries, before);
    const paid = await Promise.all(replicas.map(paidBy));
    recordFigures("three api replicas", {
      rules: "M4 M2 R5",
      requests: provider.requests,
      faults: "none: three consumers of one durable consumer",
      notifications: deliveries.length,
      accepted: outcome.accepted,
      lost: outcome.lost,
      applied_twice: outcome.appliedTwice,
      seconds: seconds(startedAt),
      paid_by_replica: paid.join(" / "),
    });

    expect(outcome.accepted).toBe(150);
    expect(outcome.lost).toBe(0);
    expect(outcome.appliedTwice).toBe(0);
    expect(outcome.changed).toEqual(paidOnce(150));
    expect(paid.reduce((a, b) => a + b, 0)).toBe(150);
  });
});

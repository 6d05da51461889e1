import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { succeeded } from "@commerce/testing/processes";
import { recordFigures } from "./figures";
import { Provider } from "./provider";
import { faultStackForFile, paidOnce, placeOrders, seconds, settle, tableCounts } from "./support";

setDefaultTimeout(120_000);

const env = await faultStackForFile();

describe("payments killed in the middle of a burst", () => {
  test("W5, W6, W8, M2, R5: payments SIGKILLed mid-burst of 100 and restarted; with the provider retrying, each order is paid once with one orders.paid", async () => {
    const { stack } = env;
    const orders = await placeOrders(stack, 100);
    const before = await tableCounts(stack);
    const provider = new Provider(stack.payments.url);
    const startedAt = performance.now();
    let accepted = 0;
    let restart: Promise<void> | undefined;
    const deliveries = await provider.deliverAll(
      orders.map((order) => succeeded(order)),
      20,
      {
        onAnswer: (delivery) => {
          if (delivery.accepted) accepted++;
          // Killed with 40 answered and about 20 in flight; the provider retries those.
          if (accepted === 40 && !restart)
            restart = (async () => {
              await stack.payments.stop("SIGKILL");
              await Bun.sleep(500);
              await stack.payments.start();
            })();
        },
      },
    );
    await restart;
    const outcome = await settle(stack, deliveries, before);
    const attempts = deliveries.flatMap((d) => d.attempts);
    const jsm = await stack.nats.manager();
    const published = (await jsm.streams.info(stack.topology.payments.stream)).state.messages;
    recordFigures("payments SIGKILL mid-burst", {
      rules: "W5 W6 W8 M2 R5",
      requests: provider.requests,
      faults: "payments SIGKILL ×1 after 40 of 100 answered, restarted 0.5 s later",
      notifications: deliveries.length,
      accepted: outcome.accepted,
      lost: outcome.lost,
      applied_twice: outcome.appliedTwice,
      seconds: seconds(startedAt),
      connection_errors: attempts.filter((a) => a.status === "connection error").length,
      non_2xx_answers: attempts.filter((a) => typeof a.status === "number" && a.status >= 300)
        .length,
      duplicate_on_retry: deliveries.filter((d) => d.duplicate).length,
      payments_messages_published: published,
    });

    expect(restart).toBeDefined();
    expect(attempts.some((a) => a.status === "connection error")).toBe(true);
    expect(attempts.every((a) => a.status === "connection error" || a.status === 200)).toBe(true);
    expect(outcome.accepted).toBe(100);
    expect(outcome.lost).toBe(0);
    expect(outcome.appliedTwice).toBe(0);
    expect(outcome.changed).toEqual(paidOnce(100));
    expect(published).toBe(100);
  });
});

import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { PaymentMessage } from "@commerce/shared/contract/messages";
import { succeeded } from "@commerce/testing/processes";
import { recordFigures } from "./figures";
import { Provider } from "./provider";
import {
  faultStackForFile,
  holdRowLock,
  paidOnce,
  placeOrders,
  seconds,
  settle,
  someoneWaitsOnLock,
  tableCounts,
  timeUntil,
} from "./support";

setDefaultTimeout(150_000);

const env = await faultStackForFile();

describe("api killed while applying messages", () => {
  test("M2, R5: the api SIGKILLed inside the transaction applying a message; after restart every message is applied once, with one orders.paid each", async () => {
    const { stack } = env;
    const orders = await placeOrders(stack, 100);
    const ids = orders.map((o) => o.order_id);
    const before = await tableCounts(stack);
    const startedAt = performance.now();

    // With the api away, all 100 messages wait in JetStream, so the restarted api applies a run of them.
    expect(await stack.api.stop()).toBe(0);
    const provider = new Provider(stack.payments.url);
    const deliveries = await provider.deliverAll(
      orders.map((order) => succeeded(order)),
      10,
    );
    const jsm = await stack.nats.manager();
    const stream = stack.topology.payments.stream;
    await timeUntil(
      async () => (await jsm.streams.info(stream)).state.messages === 100,
      10_000,
      "100 messages in JetStream",
    );

    // A row lock on the 50th message's order holds the consumer inside the statement applying it.
    const fiftieth = (await jsm.streams.getMessage(stream, { seq: 50 })).json<PaymentMessage>();
    const lock = await holdRowLock(env.postgres.url, "orders", fiftieth.order_id);
    const paid = async () =>
      (
        await stack.sql`select count(*)::int as n from api.orders where id in ${stack.sql(ids)} and status = 'paid'`
      )[0].n as number;

    await stack.api.start();
    await timeUntil(
      () => someoneWaitsOnLock(stack),
      20_000,
      "the consumer to wait on the locked order",
    );
    const paidAtKill = await paid();
    const [fiftiethAtKill] =
      await stack.sql`select status from api.orders where id = ${fiftieth.order_id}`;
    await stack.api.stop("SIGKILL");
    await lock.release();
    await stack.api.start();
    const restartedAt = performance.now();

    // Messages the killed api had pulled but not acked come back after the 30 s ack wait.
    const outcome = await settle(stack, deliveries, before, 120_000);
    recordFigures("api SIGKILL while applying", {
      rules: "M2 R5",
      requests: provider.requests,
      faults: "api SIGKILL ×1 inside the transaction of message 50 of 100 (held by a row lock)",
      notifications: deliveries.length,
      accepted: outcome.accepted,
      lost: outcome.lost,
      applied_twice: outcome.appliedTwice,
      seconds: seconds(startedAt),
      paid_before_kill: paidAtKill,
      settled_after_restart_s: seconds(restartedAt),
    });

    // Messages are applied many at once (M5), so how many others were paid by then varies; the
    // one whose order is locked, and whatever shares its statement, were not.
    expect(fiftiethAtKill.status).toBe("created");
    expect(paidAtKill).toBeLessThan(100);
    expect(outcome.accepted).toBe(100);
    expect(outcome.lost).toBe(0);
    expect(outcome.appliedTwice).toBe(0);
    expect(outcome.changed).toEqual(paidOnce(100));
  });
});

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually, unique } from "@commerce/testing/basics";
import { PrivateNats } from "@commerce/testing/nats-server";
import { type Stack, startStack, succeeded } from "@commerce/testing/processes";
import { connect, type NatsConnection } from "nats";

setDefaultTimeout(60_000);

// The deployment's users and permissions, on a private nats-server (N1).
const authConfig = new URL("../../deploy/nats-auth.conf", import.meta.url).pathname;
const passwords = { api: unique("pw"), payments: unique("pw") };
const nats = new PrivateNats({
  include: authConfig,
  env: { NATS_API_PASSWORD: passwords.api, NATS_PAYMENTS_PASSWORD: passwords.payments },
});
let stack: Stack;

beforeAll(async () => {
  await nats.start();
  stack = await startStack({
    natsUrl: nats.url,
    // The permissions name the deployment's streams; this server has no other stack.
    prefix: "",
    natsCredentials: { user: "api", pass: passwords.api },
    serviceEnv: {
      // Both documented forms: separate variables, and the user information of NATS_URL.
      api: { NATS_USER: "api", NATS_PASSWORD: passwords.api },
      payments: {
        NATS_URL: `nats://payments:${passwords.payments}@127.0.0.1:${nats.port}`,
        // B2: the anti-entropy question runs every second here, so the test sees it answered.
        ANTI_ENTROPY_INTERVAL_SECONDS: "1",
        ANTI_ENTROPY_GRACE_SECONDS: "1",
      },
    },
  });
});
afterAll(async () => {
  await stack?.stop().catch(() => {});
  await nats.dispose();
});

type User = "api" | "payments";

/** A connection as one of the deployment's users, with its own inbox prefix as the services use. */
const connectAs = (user: User) =>
  connect({ servers: nats.url, user, pass: passwords[user], inboxPrefix: `_INBOX_${user}` });

/** Publishes as `user` and resolves with the permission error NATS answers, if any. */
async function publishAs(user: User, subject: string, payload: object) {
  const nc = await connectAs(user);
  try {
    const refused = watchErrors(nc);
    nc.publish(subject, JSON.stringify(payload));
    await nc.flush();
    // The server's -ERR follows the publish; a flush round trip comes after it.
    return await Promise.race([refused, Bun.sleep(1000).then(() => undefined)]);
  } finally {
    await nc.close();
  }
}

async function watchErrors(nc: NatsConnection) {
  for await (const status of nc.status())
    if (status.type === "error") return { code: status.data, ...status.permissionContext };
  return undefined;
}

/** How many messages a stream holds, read with the api's user (which may read stream info). */
async function streamMessages(stream: string): Promise<number> {
  const jsm = await stack.nats.manager();
  return (await jsm.streams.info(stream)).state.messages;
}

describe("NATS permissions", () => {
  test("N1: each service works with its own NATS user: a signed webhook pays an order end to end", async () => {
    const order = await stack.newOrder();
    expect((await stack.notify(succeeded(order))).status).toBe(200);
    await stack.paid(order.order_id);
    expect(await streamMessages("PAYMENTS")).toBeGreaterThanOrEqual(1);
    expect(await streamMessages("ORDERS")).toBeGreaterThanOrEqual(1);
    // /metrics reads the consumer's state with the api's user.
    const metrics = await (await fetch(`${stack.api.url}/metrics`)).text();
    expect(metrics).toMatch(/^payment_consumer_lag 0$/m);
    expect(await nats.log()).not.toContain("Violation");
    // Neither service was refused anything it asked for under a normal flow.
    for (const service of [stack.api, stack.payments])
      expect(service.output).not.toContain("PERMISSIONS_VIOLATION");
  });

  test("N1: the api may read the payments stream's messages the oldest-unapplied gauge needs", async () => {
    // The gauge reads the message after the consumer's ack floor; refused, it read NaN under lag.
    const nc = await connectAs("api");
    try {
      const jsm = await nc.jetstreamManager();
      const first = (await jsm.streams.info("PAYMENTS")).state.first_seq;
      const message = await jsm.streams.getMessage("PAYMENTS", { seq: first });
      expect(message.subject).toStartWith("payments.order.");
    } finally {
      await nc.close();
    }
    const metrics = await (await fetch(`${stack.api.url}/metrics`)).text();
    expect(metrics).toMatch(/^payment_message_oldest_unapplied_age_seconds \d/m);
  });

  test("N1: the api's user cannot change PAYMENTS (max_msgs, sources), nor payments' ORDERS", async () => {
    /** Tries a stream update as `user`; resolves with how it ended. */
    const update = async (user: User, stream: string, change: Record<string, unknown>) => {
      const nc = await connectAs(user);
      try {
        const jsm = await nc.jetstreamManager({ timeout: 2000 });
        const info = await jsm.streams.info(stream);
        return await jsm.streams.update(stream, { ...info.config, ...change }).then(
          () => "updated",
          (error: Error) => error.message,
        );
      } finally {
        await nc.close();
      }
    };
    const before = {
      PAYMENTS: (await stack.nats.manager().then((m) => m.streams.info("PAYMENTS"))).config,
      ORDERS: (await stack.nats.manager().then((m) => m.streams.info("ORDERS"))).config,
    };
    // The reviewer's attack: PAYMENTS shrunk to one message, so accepted payments never arrive.
    expect(await update("api", "PAYMENTS", { max_msgs: 1 })).not.toBe("updated");
    expect(await update("api", "PAYMENTS", { sources: [{ name: "ORDERS" }] })).not.toBe("updated");
    expect(await update("payments", "ORDERS", { max_msgs: 1 })).not.toBe("updated");
    expect(await update("payments", "ORDERS", { sources: [{ name: "PAYMENTS" }] })).not.toBe(
      "updated",
    );
    expect(await nats.log()).toContain(
      'Publish Violation - User "api", Subject "$JS.API.STREAM.UPDATE.PAYMENTS"',
    );
    expect(await nats.log()).toContain(
      'Publish Violation - User "payments", Subject "$JS.API.STREAM.UPDATE.ORDERS"',
    );
    const jsm = await stack.nats.manager();
    expect((await jsm.streams.info("PAYMENTS")).config).toEqual(before.PAYMENTS);
    expect((await jsm.streams.info("ORDERS")).config).toEqual(before.ORDERS);

    // Payments still reach the api afterwards.
    const order = await stack.newOrder();
    expect((await stack.notify(succeeded(order))).status).toBe(200);
    await stack.paid(order.order_id);
  });

  test("N1: neither user can read the other's replies (its inbox), nor the shared _INBOX.>", async () => {
    /** Subscribes as `user` and resolves with the permission error NATS answers, if any. */
    const subscribeAs = async (user: User, subject: string) => {
      const nc = await connectAs(user);
      try {
        const refused = watchErrors(nc);
        nc.subscribe(subject);
        await nc.flush();
        return await Promise.race([refused, Bun.sleep(1000).then(() => undefined)]);
      } finally {
        await nc.close();
      }
    };
    for (const [user, subject] of [
      ["payments", "_INBOX_api.>"],
      ["payments", "_INBOX.>"],
      ["api", "_INBOX_payments.>"],
      ["api", "_INBOX.>"],
    ] as const)
      expect(await subscribeAs(user, subject)).toMatchObject({
        code: "PERMISSIONS_VIOLATION",
        operation: "subscription",
        subject,
      });
    // And its own inbox works: a request answered by someone the user may hear from.
    expect(await subscribeAs("api", "_INBOX_api.>")).toBeUndefined();
  });

  test("N1: only payments may ask the api which notifications it applied (B2's question), and the api answers only on the question's reply subject", async () => {
    const order = await stack.newOrder();
    const notification = succeeded(order);
    const since = new Date();
    expect((await stack.notify(notification)).status).toBe(200);
    await stack.paid(order.order_id);
    // The service's own anti-entropy runs compare it with what the api applied, unrefused.
    await eventually(
      async () =>
        (
          await stack.sql`
            select 1 from payments.reconciliation_runs
            where scope = 'PAYMENTS' and kind = 'inbox' and started_at > ${since}
              and checked > 0 and errors = 0 and finished_at is not null`
        )[0],
      15_000,
      "a complete anti-entropy run that compared the payment",
    );
    expect(await nats.log()).not.toContain('Subject "payment-inbox.applied"');
    expect(await nats.log()).not.toContain(
      'Publish Violation - User "api", Subject "_INBOX_payments',
    );

    const nc = await connectAs("payments");
    try {
      const reply = await nc.request(
        "payment-inbox.applied",
        JSON.stringify({ ids: [notification.id, unique("never")] }),
        { timeout: 5000 },
      );
      expect(reply.json()).toEqual({ applied: [notification.id], pending_since: null });
    } finally {
      await nc.close();
    }
    // The api may not ask, nor answer into payments' inbox outside a question it received.
    expect(
      await publishAs("api", "payment-inbox.applied", { ids: [notification.id] }),
    ).toMatchObject({ code: "PERMISSIONS_VIOLATION", subject: "payment-inbox.applied" });
    expect(await publishAs("api", "_INBOX_payments.forged", { applied: [] })).toMatchObject({
      code: "PERMISSIONS_VIOLATION",
      subject: "_INBOX_payments.forged",
    });
  });

  test("N1, F1: only the api may ask payments which providers it refunds through, and payments answers on the question's reply subject", async () => {
    const nc = await connectAs("api");
    try {
      const reply = await eventually(() =>
        nc
          .request("refund-providers.configured", undefined, { timeout: 2000 })
          .catch(() => undefined),
      );
      // This stack configures no provider API: it refunds through none.
      expect(reply.json()).toEqual({ providers: [] });
    } finally {
      await nc.close();
    }
    expect(await nats.log()).not.toContain('Subject "refund-providers.configured"');
    expect(await publishAs("payments", "refund-providers.configured", {})).toMatchObject({
      code: "PERMISSIONS_VIOLATION",
      subject: "refund-providers.configured",
    });
  });

  test("N1: an order-paid message from the api's user, or from no user, is refused and never applied", async () => {
    const order = await stack.newOrder();
    const forged = {
      notification_id: unique("forged"),
      order_id: order.order_id,
      amount: order.amount,
      currency: order.currency,
      received_at: new Date().toISOString(),
    };
    const before = await streamMessages("PAYMENTS");

    expect(await publishAs("api", "payments.order.paid", forged)).toEqual({
      code: "PERMISSIONS_VIOLATION",
      operation: "publish",
      subject: "payments.order.paid",
    });
    // And the other way round: payments may not write the api's orders.* messages.
    expect(
      await publishAs("payments", "orders.paid", { order_id: order.order_id, source: "manual" }),
    ).toMatchObject({ code: "PERMISSIONS_VIOLATION", subject: "orders.paid" });
    const anonymous = await connect({ servers: nats.url, reconnect: false }).then(
      async (nc) => {
        await nc.close();
        return "connected";
      },
      (error: { code?: string }) => error.code,
    );
    expect(anonymous).toBe("AUTHORIZATION_VIOLATION");
    expect(await nats.log()).toContain(
      'Publish Violation - User "api", Subject "payments.order.paid"',
    );

    // A real payment afterwards: once the api has applied it, it would have applied anything
    // stored before it; the forged message never reached the stream at all.
    const other = await stack.newOrder();
    expect((await stack.notify(succeeded(other))).status).toBe(200);
    await stack.paid(other.order_id);
    expect(await streamMessages("PAYMENTS")).toBe(before + 1);
    expect(await stack.orderStatus(order.order_id)).toBe("created");
    const processed = await stack.sql`select 1 from api.processed_notifications
      where notification_id = ${forged.notification_id} or order_id = ${order.order_id}`;
    expect(processed).toHaveLength(0);
  });
});

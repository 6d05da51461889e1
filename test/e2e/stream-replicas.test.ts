import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { streamsOf } from "@commerce/shared/contract/messages";
import { createLogger } from "@commerce/shared/platform/logger";
import { ensureStream, NatsLink, StreamReplicasError } from "@commerce/shared/platform/nats";
import { eventually, unique } from "@commerce/testing/basics";
import { PrivateNats } from "@commerce/testing/nats-server";
import { type Stack, startStack, succeeded } from "@commerce/testing/processes";
import type { JetStreamManager } from "nats";

setDefaultTimeout(60_000);

/** A single nats-server: it holds one replica of a stream and no more. */
const nats = new PrivateNats();
let link: NatsLink;
let jsm: JetStreamManager;
let stack: Stack | undefined;
beforeAll(async () => {
  await nats.start();
  link = new NatsLink(
    nats.url,
    "replicas-test",
    createLogger("error", {}, () => {}),
  );
  await link.start();
  jsm = await link.manager();
});
afterAll(async () => {
  await stack?.stop();
  await link.close();
  await nats.dispose();
});

describe("STREAM_REPLICAS on a single nats-server", () => {
  test("X1: more than one replica is refused with an error naming STREAM_REPLICAS; an existing stream keeps working as it was", async () => {
    const name = unique("R");
    const refused = await ensureStream(jsm, { name, subjects: [`${name}.>`], replicas: 3 }).catch(
      (error) => error,
    );
    expect(refused).toBeInstanceOf(StreamReplicasError);
    expect(refused.kept).toBeUndefined();
    expect(refused.message).toContain(`stream ${name}: NATS refused STREAM_REPLICAS=3`);
    expect(refused.message).toContain("it was not created");

    await ensureStream(jsm, { name, subjects: [`${name}.>`], replicas: 1 });
    const kept = await ensureStream(jsm, { name, subjects: [`${name}.>`], replicas: 3 }).catch(
      (error) => error,
    );
    expect(kept).toBeInstanceOf(StreamReplicasError);
    expect(kept.message).toContain("it keeps 1 replica(s)");
    expect((await jsm.streams.info(name)).config.num_replicas).toBe(1);
    await jsm.streams.delete(name);
  });

  test("X1: services with STREAM_REPLICAS=3 keep serving on a single server: the refused streams are logged and retried; once they exist (R1) notifications pay orders", async () => {
    stack = await startStack({ natsUrl: nats.url, env: { STREAM_REPLICAS: "3" } });
    const { api, payments, topology } = stack;
    const logged = (text: string) => api.output.includes(text) && payments.output.includes(text);
    await eventually(
      async () => (logged("NATS refused STREAM_REPLICAS=3") ? true : undefined),
      10_000,
      "both services to log the refused replicas",
    );
    expect(payments.output).toContain('"nats setup failed"');
    expect(payments.output).toContain("retry_in_ms");

    // Still serving: the notification is accepted and waits in the outbox (W6).
    const order = await stack.newOrder();
    const notification = succeeded(order);
    expect((await stack.notify(notification)).status).toBe(200);
    expect((await fetch(`${api.url}/ready`)).status).toBe(200);

    // What a single server can hold: the next retry finds the streams, keeps them R1, carries on.
    for (const stream of streamsOf(topology)) await ensureStream(jsm, stream);
    await stack.paid(order.order_id, 30_000);
    expect(await stack.publishedOrdersPaid(order.order_id)).toHaveLength(1);
    await eventually(
      async () => (logged('"nats stream replicas not changed"') ? true : undefined),
      10_000,
      "both services to carry on with the R1 streams",
    );
  });
});

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { ensureConsumer, ensureStream } from "@commerce/shared/platform/nats";
import { unique } from "@commerce/testing/basics";
import { PrivateNatsCluster } from "@commerce/testing/nats-server";
import { type Stack, succeeded } from "@commerce/testing/processes";
import type { JetStreamManager, StreamInfo } from "nats";
import { recordFigures } from "./figures";
import { Provider } from "./provider";
import {
  paidOnce,
  placeOrders,
  seconds,
  settle,
  startFaultStack,
  tableCounts,
  timeUntil,
} from "./support";

setDefaultTimeout(240_000);

let env: Awaited<ReturnType<typeof startFaultStack<PrivateNatsCluster>>>;
beforeAll(async () => {
  env = await startFaultStack({ env: { STREAM_REPLICAS: "3" } }, new PrivateNatsCluster());
});
afterAll(() => env?.dispose());

const names = (info: StreamInfo) => [
  info.cluster?.leader ?? "",
  ...(info.cluster?.replicas ?? []).map((peer) => peer.name),
];

/** Every peer of the stream is up and has all of it. */
const allCurrent = (info: StreamInfo | undefined) =>
  !!info?.cluster?.leader &&
  info.cluster.replicas?.length === 2 &&
  info.cluster.replicas.every((peer) => peer.current && !peer.offline);

/** Both streams and the api's consumer have a leader and two current followers. */
async function clusterHealed(stack: Stack, jsm: JetStreamManager): Promise<boolean> {
  const { payments, orders, paymentEventsConsumer } = stack.topology;
  const [paymentsInfo, ordersInfo, consumer] = await Promise.all([
    jsm.streams.info(payments.stream).catch(() => undefined),
    jsm.streams.info(orders.stream).catch(() => undefined),
    jsm.consumers.info(payments.stream, paymentEventsConsumer).catch(() => undefined),
  ]);
  return (
    allCurrent(paymentsInfo) &&
    allCurrent(ordersInfo) &&
    !!consumer?.cluster?.leader &&
    (consumer.cluster.replicas ?? []).every((peer) => peer.current && !peer.offline)
  );
}

/** Times of one node's loss, in ms from the SIGKILL. */
type NodeLoss = {
  victim: string;
  leader_before: string;
  /** Leaders of the ORDERS stream and the api's consumer when the node was killed. */
  orders_leader: string;
  consumer_leader: string;
  leader_after: string;
  /** Clients connected to the killed node, i.e. what had to reconnect elsewhere. */
  clients_on_victim: string[];
  leader_elected_ms: number;
  payments_published_again_ms: number;
  orders_paid_published_again_ms: number;
  restarted_after_ms: number;
  healed_ms: number;
};

const degradedForMs = 3_000;
const logLines = (stack: Stack, text: string) =>
  `${stack.api.output}\n${stack.payments.output}`.split(text).length - 1;

/**
 * SIGKILLs one node of the cluster: the PAYMENTS stream's leader, or a follower (the one most
 * service connections are on), times the recovery, and restarts the node after `degradedForMs`.
 */
async function killNode(role: "leader" | "follower"): Promise<NodeLoss> {
  const { stack, nats: cluster } = env;
  // Short requests, so a request lost with the test's own node does not hide the election.
  const nc = stack.nats.nc;
  if (!nc) throw new Error("the test's NATS connection is not open");
  const jsm = await nc.jetstreamManager({ timeout: 500 });
  const stream = stack.topology.payments.stream;
  const { orders, paymentEventsConsumer } = stack.topology;
  const info = await jsm.streams.info(stream);
  const leader = info.cluster?.leader ?? "";
  const otherLeaders = [
    (await jsm.streams.info(orders.stream)).cluster?.leader ?? "",
    (await jsm.consumers.info(stream, paymentEventsConsumer)).cluster?.leader ?? "",
  ];
  let victim = leader;
  if (role === "follower") {
    // A node that leads nothing if there is one (the consumer and ORDERS have leaders of their
    // own), else the one leading least; among those, the one most services are connected to.
    const services = async (name: string) =>
      (await cluster.clientsOf(name)).filter((c) => c === "api" || c === "payments").length;
    const rank = async (name: string) =>
      otherLeaders.filter((l) => l === name).length * 10 - (await services(name));
    const followers = names(info).slice(1);
    const ranks = await Promise.all(followers.map(rank));
    victim = followers[ranks.indexOf(Math.min(...ranks))];
  }
  const clients = await cluster.clientsOf(victim);
  const killedWall = new Date();
  const killedAt = performance.now();
  await cluster.node(victim).stop("SIGKILL");
  const since = (startedAt: number) => Math.round(performance.now() - startedAt);

  let leaderAfter = "";
  const leaderElected = async () => {
    leaderAfter = (await jsm.streams.info(stream).catch(() => undefined))?.cluster?.leader ?? "";
    return leaderAfter !== "" && leaderAfter !== victim;
  };
  const publishedSinceKill = async (schema: "payments" | "api") =>
    (
      await stack.sql`select count(*)::int as n from ${stack.sql(schema)}.outbox
        where published_at > ${killedWall}`
    )[0].n > 0;
  const [leaderElectedMs, paymentsAgain, ordersAgain] = await Promise.all(
    [
      timeUntil(leaderElected, 30_000, "a PAYMENTS leader on a live node"),
      timeUntil(() => publishedSinceKill("payments"), 60_000, "a payments message published"),
      timeUntil(() => publishedSinceKill("api"), 60_000, "an orders.paid published"),
    ].map((waited) => waited.then(() => since(killedAt))),
  );

  await Bun.sleep(Math.max(0, degradedForMs - since(killedAt)));
  const restartedAfter = since(killedAt);
  await cluster.node(victim).start();
  await timeUntil(() => clusterHealed(stack, jsm), 60_000, "the restarted node caught up");
  return {
    victim,
    leader_before: leader,
    orders_leader: otherLeaders[0],
    consumer_leader: otherLeaders[1],
    leader_after: leaderAfter,
    clients_on_victim: clients,
    leader_elected_ms: leaderElectedMs,
    payments_published_again_ms: paymentsAgain,
    orders_paid_published_again_ms: ordersAgain,
    restarted_after_ms: restartedAfter,
    healed_ms: since(killedAt),
  };
}

/** Accepted → order paid, over the notifications of one burst, in ms. */
async function paidLatency(stack: Stack, ids: string[]) {
  const [row] = await stack.sql`select
      percentile_cont(0.5) within group (order by o.paid_at - n.received_at) as p50,
      percentile_cont(0.99) within group (order by o.paid_at - n.received_at) as p99,
      max(o.paid_at - n.received_at) as max
    from payments.notifications n join api.orders o on o.id = n.order_id
    where n.id in ${stack.sql(ids)}`;
  const ms = (interval: string) => {
    const [h, m, s] = interval.split(":").map(Number);
    return Math.round(((h * 60 + m) * 60 + s) * 1000);
  };
  return { p50: ms(row.p50), p99: ms(row.p99), max: ms(row.max) };
}

/** 200 notifications, 20 in flight, one node SIGKILLed when 50 are answered, then restarted. */
async function burstWithNodeLoss(role: "leader" | "follower") {
  const { stack } = env;
  const orders = await placeOrders(stack, 200);
  const before = await tableCounts(stack);
  const jsm = await stack.nats.manager();
  const stream = stack.topology.payments.stream;
  const storedBefore = (await jsm.streams.info(stream)).state.messages;
  const warnings = ["nats disconnected", "outbox relay will retry", "payment consumer restarting"];
  const warningsBefore = warnings.map((w) => logLines(stack, w));
  const provider = new Provider(stack.payments.url);
  const startedAt = performance.now();
  let accepted = 0;
  let loss: Promise<NodeLoss> | undefined;
  const deliveries = await provider.deliverAll(
    orders.map((order) => succeeded(order)),
    20,
    {
      onAnswer: (delivery) => {
        if (delivery.accepted) accepted++;
        if (accepted === 50 && !loss) loss = killNode(role);
      },
    },
  );
  const times = await loss;
  const outcome = await settle(stack, deliveries, before, 120_000);
  const stored = (await jsm.streams.info(stream)).state.messages - storedBefore;
  const attempts = deliveries.flatMap((d) => d.attempts);
  const latency = await paidLatency(
    stack,
    deliveries.map((d) => d.body.id),
  );
  const logged = Object.fromEntries(
    warnings.map((w, i) => [w.replaceAll(" ", "_"), logLines(stack, w) - warningsBefore[i]]),
  );
  recordFigures(`NATS node SIGKILL (${role})`, {
    rules: "X1 W6 M2 R5",
    requests: provider.requests,
    faults: `SIGKILL of ${times?.victim} (the PAYMENTS ${role}) after 50 of 200 answered, restarted ${times?.restarted_after_ms} ms later`,
    notifications: deliveries.length,
    accepted: outcome.accepted,
    lost: outcome.lost,
    applied_twice: outcome.appliedTwice,
    seconds: seconds(startedAt),
    retries: provider.requests - deliveries.length,
    non_2xx_answers: attempts.filter((a) => a.status !== 200).length,
    payments_messages_stored: stored,
    ...(times ?? {}),
    clients_on_victim: times?.clients_on_victim.join(" ") ?? "",
    paid_latency_ms: latency,
    log_lines: logged,
  });

  expect(times).toBeDefined();
  if (role === "leader") expect(times?.victim).toBe(times?.leader_before ?? "");
  else expect(times?.victim).not.toBe(times?.leader_before ?? "");
  expect(times?.leader_after).not.toBe(times?.victim ?? "");
  expect(outcome.accepted).toBe(200);
  expect(outcome.lost).toBe(0);
  expect(outcome.appliedTwice).toBe(0);
  expect(outcome.changed).toEqual(paidOnce(200));
  expect(stored).toBe(200);
}

describe("a three-node NATS cluster with R3 streams", () => {
  test("X1: with STREAM_REPLICAS=3 both services create the streams with three replicas (the api's consumer follows)", async () => {
    const { stack } = env;
    const jsm = await stack.nats.manager();
    // Streams just created may still be electing their leaders.
    await timeUntil(() => clusterHealed(stack, jsm), 20_000, "every replica current");
    for (const stream of [stack.topology.payments.stream, stack.topology.orders.stream]) {
      const info = await jsm.streams.info(stream);
      expect(info.config.num_replicas).toBe(3);
      expect(new Set(names(info))).toEqual(new Set(env.nats.names));
    }
    const consumer = await jsm.consumers.info(
      stack.topology.payments.stream,
      stack.topology.paymentEventsConsumer,
    );
    expect(consumer.cluster?.replicas).toHaveLength(2);
  });

  test("X1: raising STREAM_REPLICAS from 1 to 3 on an existing stream replicates it and its consumer", async () => {
    const jsm = await env.stack.nats.manager();
    const name = unique("R");
    const spec = { name, subjects: [`${name}.>`] };
    try {
      await ensureStream(jsm, { ...spec, replicas: 1 });
      await ensureConsumer(jsm, {
        stream: name,
        durable: "d",
        filterSubject: `${name}.>`,
        ackWaitMs: 30_000,
      });
      await env.stack.nats.jetstream()?.publish(`${name}.x`, new Uint8Array([1]));
      expect((await jsm.streams.info(name)).config.num_replicas).toBe(1);
      await ensureStream(jsm, { ...spec, replicas: 3 });
      await timeUntil(
        async () => allCurrent(await jsm.streams.info(name)),
        10_000,
        "three current replicas",
      );
      const info = await jsm.streams.info(name);
      expect(info.config.num_replicas).toBe(3);
      expect(info.state.messages).toBe(1);
      await timeUntil(
        async () => (await jsm.consumers.info(name, "d")).cluster?.replicas?.length === 2,
        10_000,
        "the consumer on three nodes",
      );
    } finally {
      await jsm.streams.delete(name).catch(() => {});
    }
  });

  test("X1: a node that is not the PAYMENTS leader SIGKILLed mid-burst of 200 and restarted; each accepted notification pays its order once, with one orders.paid", async () => {
    await burstWithNodeLoss("follower");
  });

  test("X1: the PAYMENTS stream leader SIGKILLed mid-burst of 200 and restarted; each accepted notification pays its order once, with one orders.paid", async () => {
    await burstWithNodeLoss("leader");
  });
});

/**
 * Paid orders sustained (issue 38, item 3), measured on a private stack
 * (test/harness/private-stack.ts): orders created beforehand are paid by signed notifications
 * sent on a clock, as bench/paid-cost.ts's open loop sends them, for minutes. The notifications
 * are signed a second's worth ahead of the clock (their timestamps must stay within the 300 s
 * tolerance), and the sender never waits for an answer before the next send: a slow stack makes
 * requests pile up, it does not slow the clock. They go over a bounded number of keep-alive
 * connections (`keepAliveClient`: 64, one request at a time on each, the rest queued in the
 * sender), written on raw sockets: `fetch` cost the bench process ~0.6 ms of CPU per request,
 * which at 1,000/s would have taken a third of the machine's two cores from the stack.
 *
 * Each order's times: sent, accepted (the 200), paid (`orders.paid` on NATS), told (the stack's
 * receiver got its `orders.paid` webhook). Every `bucketS` seconds the row samples CPU of every
 * process, the api's and payments' RSS, the bench process's own CPU (the sender, and the
 * receiver and subscription it also runs) and the backlog (sent, not yet paid: answered or not).
 * Sending stops on the clock: what still waits in the sender's queue then is dropped, never sent
 * (and counted); the row drains until every accepted order is paid and told, or a deadline.
 */
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import type { OrderEvent } from "@commerce/shared/contract/messages";
import type { PrivateStack } from "@commerce/testing/private-stack";
import { percentile } from "./order-paid-latency";
import { signedPayment } from "./paid-cost";

type Order = { order_id: number; amount: number; currency: string };

type Sample = {
  at_s: number;
  ticks: ReturnType<PrivateStack["ticks"]>;
  rss: ReturnType<PrivateStack["rss"]>;
  bench_cpu_us: number;
  backlog: number;
  unanswered: number;
  queued: number;
};

export type SustainedBucket = {
  from_s: number;
  to_s: number;
  sent: number;
  accepted: number;
  paid: number;
  told: number;
  /** Of the orders accepted in this bucket. */
  paid_p50_ms: number;
  paid_p99_ms: number;
  told_p50_ms: number;
  told_p99_ms: number;
  /** At the bucket's end: sent, not yet paid; of them, not yet answered. */
  backlog: number;
  unanswered: number;
  /** Of those in flight, waiting in the sender for a free connection. */
  queued: number;
  rss_api_mib: number;
  rss_payments_mib: number;
  /** CPU of api, payments, NATS and PostgreSQL per order paid in the bucket, ms. */
  cpu_ms_per_paid: number;
  cores_busy: number;
  /** The bench process (sender, receiver, NATS subscription): CPU per order sent, µs. */
  bench_cpu_us_per_sent: number;
};

export type Sustained = {
  rate_per_s: number;
  seconds: number;
  bucket_s: number;
  orders: number;
  sent: number;
  accepted: number;
  refused: number;
  /** Waiting in the sender's queue when sending stopped: never sent. */
  dropped: number;
  paid: number;
  told: number;
  /** Accepted but not paid by the drain's deadline. */
  lost: number;
  untold: number;
  /** Orders paid while sending, a second: the rate the machine held. */
  held_per_s: number;
  backlog_at_end_of_sending: number;
  /** Sent (on the clock) → paid, which includes the wait in the sender's queue. */
  sent_paid_p50_ms: number;
  sent_paid_p99_ms: number;
  drained_s: number;
  drain_deadline_s: number;
  /** The sender's worst lateness against its clock, ms. */
  sender_late_max_ms: number;
  paid_p50_ms: number;
  paid_p99_ms: number;
  told_p50_ms: number;
  told_p99_ms: number;
  rss_mib: Record<"api" | "payments", { first_bucket: number; end: number }>;
  load_average: { start: string; end: string };
  buckets: SustainedBucket[];
};

/**
 * HTTP/1.1 POSTs to `url` over `connections` keep-alive sockets, one request at a time on each;
 * requests beyond them wait in a queue, taken in order. Free connections are used in turn, so
 * none sits idle long enough for the server to close it; one that closes is opened again, its
 * request answered 0. Answers are read by their Content-Length (the services always send one).
 */
export async function keepAliveClient(url: string, connections: number) {
  const { hostname, port, pathname } = new URL(url);
  type Request = { text: string; done: (status: number) => void };
  let queue: Request[] = [];
  let head = 0;
  const free: ((request: Request) => void)[] = [];
  let closing = false;
  const sockets = new Set<Socket>();
  const open = (): Promise<void> =>
    new Promise((resolve, reject) => {
      let buffer = "";
      let current: Request | undefined;
      const socket = connect(Number(port), hostname, () => {
        sockets.add(socket);
        next();
        resolve();
      });
      socket.setNoDelay(true);
      const take = (request: Request) => {
        current = request;
        socket.write(request.text);
      };
      const next = () => {
        current = undefined;
        if (head < queue.length) {
          take(queue[head++]);
          // Now and then, the queue's taken head goes.
          if (head > 10_000) [queue, head] = [queue.slice(head), 0];
        } else free.push(take);
      };
      socket.on("data", (chunk: Buffer) => {
        buffer += chunk.toString("latin1");
        for (;;) {
          const end = buffer.indexOf("\r\n\r\n");
          if (end < 0) return;
          const length = Number(/content-length: *(\d+)/i.exec(buffer.slice(0, end))?.[1] ?? 0);
          if (buffer.length < end + 4 + length) return;
          const status = Number(buffer.slice(9, 12));
          buffer = buffer.slice(end + 4 + length);
          current?.done(status);
          next();
        }
      });
      socket.on("error", reject);
      socket.on("close", () => {
        sockets.delete(socket);
        const index = free.indexOf(take);
        if (index >= 0) free.splice(index, 1);
        current?.done(0);
        current = undefined;
        if (!closing) void open().catch(() => {});
      });
    });
  await Promise.all(Array.from({ length: connections }, open));
  return {
    post(headers: Record<string, string>, body: string): Promise<number> {
      const text = [
        `POST ${pathname} HTTP/1.1`,
        `host: ${hostname}:${port}`,
        "content-type: application/json",
        ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
        `content-length: ${Buffer.byteLength(body)}`,
        "",
        body,
      ].join("\r\n");
      return new Promise((done) => {
        const take = free.shift();
        if (take) take({ text, done });
        else queue.push({ text, done });
      });
    },
    /** Requests waiting for a free connection. */
    queued: () => queue.length - head,
    /** The waiting requests are answered -1 and never sent. */
    drop() {
      const dropped = queue.slice(head);
      [queue, head] = [[], 0];
      for (const request of dropped) request.done(-1);
    },
    close() {
      closing = true;
      for (const socket of sockets) socket.destroy();
    },
  };
}

const hz = 100;
const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const round2 = (value: number) => Math.round(value * 100) / 100;
const benchCpuUs = () => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};

/** Pays `orders` at `rate` a second from an open loop for `seconds`; the row's figures. */
export async function measureSustained(
  stack: PrivateStack,
  orders: Order[],
  {
    rate,
    seconds,
    bucketS,
    drainS,
    connections = 64,
  }: { rate: number; seconds: number; bucketS: number; drainS: number; connections?: number },
): Promise<Sustained> {
  const n = Math.min(orders.length, Math.round(rate * seconds));
  const index = new Map(orders.slice(0, n).map((order, i) => [order.order_id, i]));
  const times = () => new Float64Array(n).fill(Number.NaN);
  const sentAt = times();
  const acceptedAt = times();
  const paidAt = times();
  const toldAt = times();
  const count = { sent: 0, accepted: 0, refused: 0, dropped: 0, paid: 0, told: 0, inFlight: 0 };

  const subscription = stack.nc.subscribe(stack.topology.orders.event("paid"));
  void (async () => {
    for await (const message of subscription) {
      const i = index.get(message.json<OrderEvent>().order_id);
      if (i !== undefined && Number.isNaN(paidAt[i])) {
        paidAt[i] = performance.now();
        count.paid++;
      }
    }
  })();
  const stopListening = stack.onDelivery((delivery) => {
    const i = index.get(delivery.order_id);
    if (!/(^|\.)paid$/.test(delivery.type) || i === undefined || !Number.isNaN(toldAt[i])) return;
    toldAt[i] = delivery.at;
    count.told++;
  });
  await stack.nc.flush();

  /** Orders `from` to `to`, signed now: one second's worth at a time, ahead of the clock. */
  const sign = (from: number, to: number) => {
    const at = Math.floor(Date.now() / 1000);
    return orders
      .slice(from, Math.min(to, n))
      .map((order) => signedPayment(order, `s-${order.order_id}`, at));
  };
  const chunk = Math.max(1, Math.round(rate));

  const loadAtStart = loadAverage();
  const client = await keepAliveClient(`${stack.payments.url}/api/webhooks/payment`, connections);
  const started = performance.now();
  const samples: Sample[] = [];
  const sample = () =>
    samples.push({
      at_s: (performance.now() - started) / 1000,
      ticks: stack.ticks(),
      rss: stack.rss(),
      bench_cpu_us: benchCpuUs(),
      backlog: count.sent - count.paid,
      unanswered: count.inFlight,
      queued: client.queued(),
    });
  sample();
  const sampler = setInterval(sample, bucketS * 1000);

  let signed = sign(0, chunk);
  let next = sign(chunk, 2 * chunk);
  let lateMax = 0;
  for (let i = 0; i < n; i++) {
    if (i > 0 && i % chunk === 0) {
      signed = next;
      next = sign(i + chunk, i + 2 * chunk);
    }
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await Bun.sleep(wait);
    // Behind the clock, it still lets the answers in now and then.
    else if (i % 64 === 0) await Bun.sleep(0);
    const now = performance.now();
    lateMax = Math.max(lateMax, now - due);
    sentAt[i] = now;
    count.sent++;
    count.inFlight++;
    const request = signed[i % chunk];
    client.post({ "x-signature": request.signature }, request.body).then((status) => {
      if (status === 200) {
        acceptedAt[i] = performance.now();
        count.accepted++;
      } else if (status === -1) count.dropped++;
      else count.refused++;
      count.inFlight--;
    });
  }
  const sendingEnded = performance.now();
  // The last bucket ends with the sending, however long it was.
  clearInterval(sampler);
  sample();
  client.drop();
  const endOfSending = samples[samples.length - 1];
  const paidWhileSending = count.paid;

  const deadline = performance.now() + drainS * 1000;
  while (
    performance.now() < deadline &&
    (count.inFlight > 0 || count.paid < count.accepted || count.told < count.accepted)
  )
    await Bun.sleep(20);
  const drainedS = (performance.now() - sendingEnded) / 1000;
  sample();
  subscription.unsubscribe();
  stopListening();
  client.close();

  const sendingS = (sendingEnded - started) / 1000;
  const buckets = bucketsOf(samples.slice(0, -1), started, { sentAt, acceptedAt, paidAt, toldAt });
  const all = latencies({ sentAt, acceptedAt, paidAt, toldAt }, () => true);
  const lost = countWhere(n, (i) => !Number.isNaN(acceptedAt[i]) && Number.isNaN(paidAt[i]));
  const untold = countWhere(n, (i) => !Number.isNaN(acceptedAt[i]) && Number.isNaN(toldAt[i]));
  const first = samples[1] ?? endOfSending;
  return {
    rate_per_s: rate,
    seconds,
    bucket_s: bucketS,
    orders: n,
    sent: countWhere(n, (i) => !Number.isNaN(sentAt[i])),
    accepted: count.accepted,
    refused: count.refused,
    dropped: count.dropped,
    paid: count.paid,
    told: count.told,
    lost,
    untold,
    held_per_s: round2(paidWhileSending / sendingS),
    backlog_at_end_of_sending: endOfSending.backlog,
    sent_paid_p50_ms: round2(all.sentPaid(0.5)),
    sent_paid_p99_ms: round2(all.sentPaid(0.99)),
    drained_s: round2(drainedS),
    drain_deadline_s: drainS,
    sender_late_max_ms: round2(lateMax),
    paid_p50_ms: round2(all.paid(0.5)),
    paid_p99_ms: round2(all.paid(0.99)),
    told_p50_ms: round2(all.told(0.5)),
    told_p99_ms: round2(all.told(0.99)),
    rss_mib: {
      api: { first_bucket: first.rss.api, end: endOfSending.rss.api },
      payments: { first_bucket: first.rss.payments, end: endOfSending.rss.payments },
    },
    load_average: { start: loadAtStart, end: loadAverage() },
    buckets,
  };
}

const countWhere = (n: number, test: (i: number) => boolean) => {
  let total = 0;
  for (let i = 0; i < n; i++) if (test(i)) total++;
  return total;
};

/** accepted → paid and accepted → told percentiles of the orders `pick` keeps. */
function latencies(
  t: Record<"sentAt" | "acceptedAt" | "paidAt" | "toldAt", Float64Array>,
  pick: (i: number) => boolean,
) {
  const { sentAt, acceptedAt, paidAt, toldAt } = t;
  const paid: number[] = [];
  const told: number[] = [];
  const sentPaid: number[] = [];
  for (let i = 0; i < acceptedAt.length; i++) {
    if (Number.isNaN(acceptedAt[i]) || !pick(i)) continue;
    // The `orders.paid` may come before the sender has read its 200: that counts as 0. One
    // not paid (or told) by the drain's deadline counts as infinitely late.
    const late = (at: number) => (Number.isNaN(at) ? Infinity : Math.max(0, at - acceptedAt[i]));
    paid.push(late(paidAt[i]));
    told.push(late(toldAt[i]));
    if (!Number.isNaN(paidAt[i])) sentPaid.push(paidAt[i] - sentAt[i]);
  }
  for (const list of [paid, told, sentPaid]) list.sort((a, b) => a - b);
  return {
    sentPaid: (q: number) => percentile(sentPaid, q),
    paid: (q: number) => percentile(paid, q),
    told: (q: number) => percentile(told, q),
  };
}

function bucketsOf(
  samples: Sample[],
  started: number,
  t: Record<"sentAt" | "acceptedAt" | "paidAt" | "toldAt", Float64Array>,
): SustainedBucket[] {
  const within = (times: Float64Array, from: number, to: number) =>
    countWhere(times.length, (i) => times[i] >= from && times[i] < to);
  return samples.slice(1).map((end, b) => {
    const start = samples[b];
    const [from, to] = [started + start.at_s * 1000, started + end.at_s * 1000];
    const paid = within(t.paidAt, from, to);
    const sent = within(t.sentAt, from, to);
    const ticks = (["api", "payments", "nats", "postgres"] as const).reduce(
      (sum, name) => sum + end.ticks[name] - start.ticks[name],
      0,
    );
    const seconds = end.at_s - start.at_s;
    const l = latencies(t, (i) => t.acceptedAt[i] >= from && t.acceptedAt[i] < to);
    return {
      from_s: round2(start.at_s),
      to_s: round2(end.at_s),
      sent,
      accepted: within(t.acceptedAt, from, to),
      paid,
      told: within(t.toldAt, from, to),
      paid_p50_ms: round2(l.paid(0.5)),
      paid_p99_ms: round2(l.paid(0.99)),
      told_p50_ms: round2(l.told(0.5)),
      told_p99_ms: round2(l.told(0.99)),
      backlog: end.backlog,
      unanswered: end.unanswered,
      queued: end.queued,
      rss_api_mib: end.rss.api,
      rss_payments_mib: end.rss.payments,
      cpu_ms_per_paid: round2(paid > 0 ? (ticks * (1000 / hz)) / paid : Number.NaN),
      cores_busy: round2(ticks / hz / seconds),
      bench_cpu_us_per_sent: Math.round(
        sent > 0 ? (end.bench_cpu_us - start.bench_cpu_us) / sent : Number.NaN,
      ),
    };
  });
}

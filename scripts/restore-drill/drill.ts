/**
 * X6: the restore drill's steps, for `npm run restore-drill` and its short test. A Patroni cluster
 * archiving to pgBackRest, both services as processes on it, orders paid through the provider's
 * door, a moment T, a mistake after it, a point-in-time restore to T into a new data directory,
 * the invariants on what came back, and a new Patroni cluster made of it for the services. Each step's time and every figure go into the `DrillResult`.
 */
import { unique } from "@commerce/testing/basics";
import { PatroniCluster } from "@commerce/testing/patroni-cluster";
import { type PlacedOrder, type Stack, startStack, succeeded } from "@commerce/testing/processes";
import postgres from "postgres";
import { type Delivery, Provider } from "../../test/faults/provider";

export type DrillOptions = {
  /**
   * Orders placed before T, at least (the shop goes on until the base backup is done; three of
   * every four paid before T, the rest after).
   */
  ordersBeforeT: number;
  /** Orders placed and paid after T (lost with the restore, as anything after T). */
  ordersAfterT: number;
  /** The Patroni cluster's base port (its ports are base … base+40; the new cluster's base+50 …). */
  base: number;
  log: (line: string) => void;
};

export type Invariant = { name: string; held: boolean; detail: string };

export type DrillResult = {
  startedAt: string;
  target: string;
  backupLabel: string;
  mistake: string;
  timings: Record<string, number>;
  figures: Record<string, number | string>;
  invariants: Invariant[];
  restoredLog: string;
};

const database = "shop";

/** Every notification the provider sent, by order, so it can send each again after the restore. */
type Sent = { body: ReturnType<typeof succeeded>; delivery: Delivery };

export async function runRestoreDrill(options: DrillOptions): Promise<DrillResult> {
  const { log } = options;
  const timings: Record<string, number> = {};
  const figures: Record<string, number | string> = {};
  const invariants: Invariant[] = [];
  const check = (name: string, held: boolean, detail: string) => {
    invariants.push({ name, held, detail });
    log(`${held ? "PASS" : "FAIL"} ${name}: ${detail}`);
  };
  const timed = async <T>(step: string, run: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const value = await run();
    timings[step] = Math.round(performance.now() - started);
    log(`${step}: ${(timings[step] / 1000).toFixed(1)} s`);
    return value;
  };
  const startedAt = new Date().toISOString();
  const cluster = new PatroniCluster(options.base, { backups: true });
  let stack: Stack | undefined;
  let restoredStack: Stack | undefined;
  let successor: PatroniCluster | undefined;
  try {
    await timed("cluster started (3 nodes, archiving)", () => cluster.start());
    const admin = postgres(cluster.multiHostUrl(), { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${database}`);
    await admin.end({ timeout: 1 });
    const url = cluster.multiHostUrl(database);
    stack = await timed("services started", () =>
      startStack({ databaseUrl: url, prefix: unique("drill") }),
    );
    const provider = new Provider(stack.payments.url);
    const sent: Sent[] = [];
    const pay = async (orders: PlacedOrder[]) => {
      const bodies = orders.map((order) => succeeded(order));
      const deliveries = await provider.deliverAll(bodies, 4);
      for (const [i, delivery] of deliveries.entries()) sent.push({ body: bodies[i], delivery });
      const live = stack as Stack;
      for (const order of orders) await live.paid(order.order_id, 30_000);
      return bodies;
    };
    /**
     * Orders placed four at a time, the first three of each four paid at once: `count` of them,
     * and more until `until` (if given) says stop.
     */
    const shop = async (count: number, until = () => true) => {
      const orders: PlacedOrder[] = [];
      const paid: PlacedOrder[] = [];
      const notifications: ReturnType<typeof succeeded>[] = [];
      while (orders.length < count || !until()) {
        const placed = await placeOrders(stack as Stack, 4);
        orders.push(...placed);
        paid.push(...placed.slice(0, 3));
        notifications.push(...(await pay(placed.slice(0, 3))));
      }
      return { orders, paid, notifications };
    };

    // Before T: the shop at work while the base backup is taken, so the backup is of a database
    // being written to and the restore replays WAL from before its end.
    let backedUp = false;
    const [backup, beforeT] = await Promise.all([
      timed("base backup (pgBackRest, full), the shop at work", async () => {
        await Bun.sleep(500);
        const taken = await cluster.backup("full");
        backedUp = true;
        return taken;
      }),
      timed("orders and payments before T (during the backup and after)", () =>
        shop(options.ordersBeforeT, () => backedUp),
      ),
    ]);
    const backupLabel = backup.label;
    log(`backup ${backupLabel} (WAL ${backup.startLsn} to ${backup.stopLsn})`);
    const sql = stack.sql;
    await waitQuiet(sql);
    const [{ target, replayed }] = await sql<{ target: string; replayed: number }[]>`
      select to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' as target,
        pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), ${backup.startLsn}::pg_lsn)::float8 as replayed`;
    figures["WAL from the backup's start to T (MB)"] = (replayed / 2 ** 20).toFixed(1);
    log(`T = ${target}`);
    const inFlight = await unappliedNotifications(sql);

    // After T: the earlier orders left unpaid paid now, new orders placed and paid.
    const afterT = await timed("orders and payments after T", async () => {
      const paidBefore = new Set(beforeT.paid);
      const unpaidBefore = beforeT.orders.filter((order) => !paidBefore.has(order));
      const orders = await placeOrders(stack as Stack, options.ordersAfterT);
      return { orders, notifications: await pay([...unpaidBefore, ...orders]) };
    });
    await waitQuiet(sql);

    // The mistake: a table emptied.
    const mistake = "truncate api.orders cascade";
    const [{ lost }] = await sql<{ lost: number }[]>`select count(*)::int as lost from api.orders`;
    await sql.unsafe(mistake);
    log(`mistake after T: ${mistake} (${lost} orders gone)`);
    await timed("WAL archived up to the mistake", () => cluster.archiveNow());
    // An operator stops the services before restoring: nothing writes to the damaged cluster.
    await stack.stop();
    stack = undefined;

    const restored = await timed("restore to T (files + WAL replay + promotion)", () =>
      cluster.restore(target, backupLabel),
    );
    timings["restore: files copied (pgbackrest restore)"] = restored.restoreMs;
    timings["restore: WAL replayed to T and promoted"] = restored.recoveryMs;

    // The invariants on the restored data.
    let restoredSql = postgres(restored.url(database), { max: 2, onnotice: () => {} });
    let restoredLog = "";
    try {
      const orderIds = (orders: PlacedOrder[]) => orders.map((order) => order.order_id);
      const ids = (bodies: { id: string }[]) => bodies.map((body) => body.id);
      const presentOrders = async (wanted: number[]) =>
        wanted.length
          ? (
              await restoredSql<{ id: number; status: string }[]>`
              select id::int, status from api.orders where id in ${restoredSql(wanted)}`
            ).map((r) => r)
          : [];
      const presentNotifications = async (wanted: string[]) =>
        wanted.length
          ? (
              await restoredSql<{ id: string }[]>`
              select id from payments.notifications where id in ${restoredSql(wanted)}`
            ).map((r) => r.id)
          : [];
      const before = await presentOrders(orderIds(beforeT.orders));
      const paidBefore = new Set(orderIds(beforeT.paid));
      const wrongStatus = before.filter(
        (row) => row.status !== (paidBefore.has(row.id) ? "paid" : "created"),
      );
      check(
        "every order committed before T is there, as it was at T",
        before.length === beforeT.orders.length && wrongStatus.length === 0,
        `${before.length} of ${beforeT.orders.length} orders; ${before.filter((r) => r.status === "paid").length} paid, ${wrongStatus.length} in another state`,
      );
      const notesBefore = await presentNotifications(ids(beforeT.notifications));
      check(
        "every notification committed before T is there",
        notesBefore.length === beforeT.notifications.length,
        `${notesBefore.length} of ${beforeT.notifications.length} notifications`,
      );
      const ordersAfter = await presentOrders(orderIds(afterT.orders));
      const notesAfter = await presentNotifications(ids(afterT.notifications));
      const [counts] = await restoredSql<
        { orders: number; notifications: number; processed: number }[]
      >`
        select (select count(*)::int from api.orders) as orders,
          (select count(*)::int from payments.notifications) as notifications,
          (select count(*)::int from api.processed_notifications) as processed`;
      check(
        "nothing committed after T is there",
        ordersAfter.length === 0 &&
          notesAfter.length === 0 &&
          counts.orders === beforeT.orders.length &&
          counts.notifications === beforeT.notifications.length,
        `${ordersAfter.length} of the ${afterT.orders.length} orders and ${notesAfter.length} of the ${afterT.notifications.length} notifications after T; ${counts.orders} orders and ${counts.notifications} notifications in all`,
      );
      check(
        "nothing was in flight at T (B2 would publish it again; the drill does not exercise that)",
        inFlight === 0 && counts.processed === counts.notifications,
        `${inFlight} notifications stored but not applied at T; ${counts.processed} applied of ${counts.notifications} restored`,
      );
      figures["orders before T"] = beforeT.orders.length;
      figures["notifications before T"] = beforeT.notifications.length;
      figures["orders after T"] = afterT.orders.length;
      figures["notifications after T"] = afterT.notifications.length;
      figures["orders emptied by the mistake"] = lost;

      // The checked copy becomes the shop's new cluster: a new Patroni cluster (its own scope in
      // etcd) takes the data directory over, and two standbys clone it.
      restoredLog = restored.log(12).split("\n").slice(1).join("\n");
      await restoredSql.end({ timeout: 1 });
      await restored.stop("fast");
      const next = new PatroniCluster(options.base + 50, { adopt: restored.dataDir });
      successor = next;
      await timed("a new Patroni cluster (3 nodes) takes the restored directory over", () =>
        next.start(),
      );
      restoredSql = postgres(next.multiHostUrl(database), { max: 2, onnotice: () => {} });
      restoredStack = await timed("services started on the new cluster", () =>
        startStack({ databaseUrl: next.multiHostUrl(database), prefix: unique("drill") }),
      );
      const ready = await Promise.all(
        [restoredStack.api, restoredStack.payments].map((service) =>
          fetch(`${service.url}/ready`).then((r) => r.status),
        ),
      );
      check(
        "the services start on it (a new Patroni cluster made of it)",
        ready.every((status) => status === 200),
        `/ready: api ${ready[0]}, payments ${ready[1]}`,
      );

      // The provider sends again every notification it ever sent: what brings the restored shop
      // forward past T.
      const resender = new Provider(restoredStack.payments.url);
      const resent = await timed("every payment re-sent by the provider", () =>
        resender.deliverAll(
          sent.map((s) => s.body),
          4,
        ),
      );
      const beforeIds = new Set(ids(beforeT.notifications));
      const duplicates = resent.filter((d) => beforeIds.has(d.body.id));
      const fresh = resent.filter((d) => !beforeIds.has(d.body.id));
      check(
        "re-sent payments from before T are answered as duplicates",
        duplicates.every((d) => d.accepted && d.duplicate),
        `${duplicates.filter((d) => d.duplicate).length} of ${duplicates.length} answered duplicate`,
      );
      check(
        "re-sent payments from after T are accepted",
        fresh.every((d) => d.accepted && !d.duplicate),
        `${fresh.filter((d) => d.accepted && !d.duplicate).length} of ${fresh.length} stored anew`,
      );
      const live = restoredStack;
      const kept = orderIds(beforeT.orders);
      for (const id of kept) await live.paid(id, 30_000).catch(() => {});
      // The orders placed after T are gone: their payments wait for a person as unknown orders.
      const lostOrders = orderIds(afterT.orders);
      await settleReviews(restoredSql, lostOrders.length);
      await Bun.sleep(1_000);
      const rows = await restoredSql<
        { id: number; status: string; paid: number; messages: number }[]
      >`
        select o.id::int, o.status,
          (select count(*)::int from api.order_events e where e.order_id = o.id and e.type = 'paid') as paid,
          (select count(*)::int from api.outbox x where x.message_id = 'order-paid-' || o.id) as messages
        from api.orders o where o.id in ${restoredSql(kept)}`;
      const paidOnce = rows.filter(
        (row) => row.status === "paid" && row.paid === 1 && row.messages === 1,
      );
      const twice = rows.filter((row) => row.paid > 1 || row.messages > 1);
      check(
        "the re-sent payments bring it forward: every order from before T paid, none twice",
        paidOnce.length === kept.length && twice.length === 0,
        `${paidOnce.length} of ${kept.length} orders paid exactly once (one paid event, one orders.paid), ${twice.length} twice`,
      );
      const [{ reviews, applied, stored }] = await restoredSql<
        { reviews: number; applied: number; stored: number }[]
      >`select
          (select count(*)::int from api.payment_reviews where reason = 'unknown_order'
            and order_id in ${restoredSql(lostOrders.length ? lostOrders : [-1])}) as reviews,
          (select count(*)::int from api.processed_notifications) as applied,
          (select count(*)::int from payments.notifications) as stored`;
      check(
        "each notification applied once; the payments of orders lost after T wait for a person",
        applied === stored && reviews === lostOrders.length,
        `${applied} applied of ${stored} stored; ${reviews} unknown_order reviews for the ${lostOrders.length} orders placed after T`,
      );
      figures["re-sent"] = resent.length;
      figures["provider requests after the restore"] = resender.requests;
    } finally {
      await restoredSql.end({ timeout: 1 });
    }
    return {
      startedAt,
      target,
      backupLabel,
      mistake,
      timings,
      figures,
      invariants,
      // The log's lines without the header naming its temporary path.
      restoredLog,
    };
  } finally {
    await restoredStack?.stop().catch(() => {});
    await successor?.stop();
    await stack?.stop().catch(() => {});
    await cluster.stop();
  }
}

/** `count` orders, each of its own product, placed four at a time. */
async function placeOrders(stack: Stack, count: number): Promise<PlacedOrder[]> {
  const orders: PlacedOrder[] = [];
  for (let i = 0; i < count; i += 4)
    orders.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(4, count - i) }, () => stack.newOrder()),
      )),
    );
  return orders;
}

/** Notifications payments stored that the api has not applied. */
async function unappliedNotifications(sql: postgres.Sql): Promise<number> {
  const [{ n }] = await sql<{ n: number }[]>`
    select count(*)::int as n from payments.notifications n
    where not exists (select from api.processed_notifications p where p.notification_id = n.key)`;
  return n;
}

/** Until every stored notification is applied and both outboxes are published. */
async function waitQuiet(sql: postgres.Sql): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const [{ waiting }] = await sql<{ waiting: number }[]>`
      select (select count(*)::int from payments.outbox where published_at is null)
        + (select count(*)::int from api.outbox where published_at is null) as waiting`;
    if (waiting === 0 && (await unappliedNotifications(sql)) === 0) return;
    if (Date.now() > deadline) throw new Error("the services did not settle within 60 s");
    await Bun.sleep(100);
  }
}

/** Until `count` unknown-order reviews are open (or 30 s passed). */
async function settleReviews(sql: postgres.Sql, count: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const [{ n }] = await sql<{ n: number }[]>`
      select count(*)::int as n from api.payment_reviews where reason = 'unknown_order'`;
    if (n >= count) return;
    await Bun.sleep(200);
  }
}

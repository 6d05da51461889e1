import { afterAll } from "bun:test";
import { eventually } from "@commerce/testing/basics";
import { PrivateNats } from "@commerce/testing/nats-server";
import { PrivatePostgres } from "@commerce/testing/postgres-server";
import { type PlacedOrder, type Stack, startStack } from "@commerce/testing/processes";
import postgres from "postgres";
import type { Delivery } from "./provider";

type NatsServer = { url: string; start(): Promise<void>; dispose(): Promise<void> };

/**
 * Both services as real processes on a private PostgreSQL cluster and a private nats-server (or
 * the test's own NATS, e.g. a `PrivateNatsCluster`), so the test may stop, kill and restart any of
 * them, and every table count is the test's own.
 */
export async function startFaultStack<Nats extends NatsServer = PrivateNats>(
  options: Parameters<typeof startStack>[0] = {},
  nats: Nats = new PrivateNats() as NatsServer as Nats,
) {
  const postgres = new PrivatePostgres();
  try {
    await Promise.all([postgres.start(), nats.start()]);
    const stack = await startStack({ ...options, databaseUrl: postgres.url, natsUrl: nats.url });
    return {
      stack,
      postgres,
      nats,
      async dispose() {
        await stack.stop().catch(() => {});
        await Promise.all([postgres.dispose(), nats.dispose()]);
      },
    };
  } catch (error) {
    await Promise.all([postgres.dispose(), nats.dispose()]);
    throw error;
  }
}

export type FaultStack = Awaited<ReturnType<typeof startFaultStack>>;

/** A fault stack (startFaultStack's, with `options`) for the calling test file, disposed of after its tests. */
export async function faultStackForFile(options: Parameters<typeof startFaultStack>[0] = {}) {
  const env = await startFaultStack(options);
  afterAll(() => env.dispose());
  return env;
}

/** `count` orders, each of its own product, placed `concurrency` at a time. */
export async function placeOrders(stack: Stack, count: number, concurrency = 8) {
  const orders: PlacedOrder[] = [];
  for (let i = 0; i < count; i += concurrency)
    orders.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(concurrency, count - i) }, () => stack.newOrder()),
      )),
    );
  return orders;
}

export type TableCounts = {
  notifications: number;
  payments_outbox: number;
  products: number;
  orders: number;
  paid_orders: number;
  cart_items: number;
  idempotency_keys: number;
  processed_notifications: number;
  payment_reviews: number;
  api_outbox: number;
  orders_paid_messages: number;
};

/** Rows of every table both services own, so a test can say exactly what changed. */
export async function tableCounts(stack: Stack): Promise<TableCounts> {
  const [row] = await stack.sql`select
    (select count(*)::int from payments.notifications) as notifications,
    (select count(*)::int from payments.outbox) as payments_outbox,
    (select count(*)::int from api.products) as products,
    (select count(*)::int from api.orders) as orders,
    (select count(*)::int from api.orders where status = 'paid') as paid_orders,
    (select count(*)::int from api.cart_items) as cart_items,
    (select count(*)::int from api.idempotency_keys) as idempotency_keys,
    (select count(*)::int from api.processed_notifications) as processed_notifications,
    (select count(*)::int from api.payment_reviews) as payment_reviews,
    (select count(*)::int from api.outbox) as api_outbox`;
  return {
    ...(row as Omit<TableCounts, "orders_paid_messages">),
    orders_paid_messages: (await stack.allOrdersPaidMessages()).length,
  };
}

/** What `n` accepted notifications, each paying its own order, must change, and nothing more. */
export const paidOnce = (n: number): TableCounts => ({
  notifications: n,
  payments_outbox: n,
  products: 0,
  orders: 0,
  paid_orders: n,
  cart_items: 0,
  idempotency_keys: 0,
  processed_notifications: n,
  payment_reviews: 0,
  api_outbox: n,
  orders_paid_messages: n,
});

export type Outcome = {
  accepted: number;
  /** Accepted, but the order is not paid or no orders.paid was published for it. */
  lost: number;
  /** Orders with more than one orders.paid message or outbox row. */
  appliedTwice: number;
  /** Every table's rows now minus before. */
  changed: TableCounts;
};

/**
 * Waits (bounded) until every accepted notification's order is paid and announced, then a little
 * longer so a late second copy would show, and counts what was lost, what was applied twice and
 * what changed.
 */
export async function settle(
  stack: Stack,
  deliveries: Delivery[],
  before: TableCounts,
  timeoutMs = 60_000,
): Promise<Outcome> {
  const ids = [...new Set(deliveries.filter((d) => d.accepted).map((d) => d.body.order_id))];
  const announced = async () => {
    const messages = await stack.allOrdersPaidMessages();
    return ids.filter((id) => messages.some((m) => m.order_id === id)).length;
  };
  await eventually(
    async () => ((await announced()) === ids.length ? true : undefined),
    timeoutMs,
    "every accepted notification's orders.paid",
  ).catch(() => {});
  await Bun.sleep(750);

  const messages = await stack.allOrdersPaidMessages();
  const rows = ids.length
    ? await stack.sql`select o.id, o.status,
        (select count(*)::int from api.outbox x where x.message_id = 'order-paid-' || o.id) as outbox
        from api.orders o where o.id in ${stack.sql(ids)}`
    : [];
  const byId = new Map(rows.map((r) => [Number(r.id), r]));
  const published = (id: number) => messages.filter((m) => m.order_id === id).length;
  const lost = ids.filter((id) => byId.get(id)?.status !== "paid" || published(id) === 0).length;
  const appliedTwice = ids.filter(
    (id) => published(id) > 1 || (byId.get(id)?.outbox ?? 0) > 1,
  ).length;
  const after = await tableCounts(stack);
  const changed = Object.fromEntries(
    Object.entries(after).map(([table, n]) => [table, n - before[table as keyof TableCounts]]),
  ) as TableCounts;
  return { accepted: ids.length, lost, appliedTwice, changed };
}

/** Polls until `probe` holds, at most `timeoutMs`; the time it took, in ms. */
export async function timeUntil(probe: () => Promise<boolean>, timeoutMs: number, what: string) {
  const started = performance.now();
  await eventually(async () => ((await probe()) ? true : undefined), timeoutMs, what);
  return Math.round(performance.now() - started);
}

/** `GET path` answers `status` (a connection error counts as not). */
export const answers = async (url: string, status: number) => {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(3_000) })).status === status;
  } catch {
    return false;
  }
};

export const seconds = (startedAt: number) =>
  Math.round((performance.now() - startedAt) / 100) / 10;

/**
 * Holds a row lock on one row of an api table from a connection of its own, so whatever the api
 * does to that row (the consumer moving an order, an order taking a product's stock) stops inside
 * its transaction until `release`.
 */
export async function holdRowLock(databaseUrl: string, table: "orders" | "products", id: number) {
  const client = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const locked = Promise.withResolvers<void>();
  const done = Promise.withResolvers<void>();
  const transaction = client
    .begin(async (tx) => {
      await tx`select id from ${tx("api")}.${tx(table)} where id = ${id} for update`;
      locked.resolve();
      await done.promise;
    })
    .catch(() => {});
  await locked.promise;
  return {
    async release() {
      done.resolve();
      await transaction;
      await client.end({ timeout: 1 });
    },
  };
}

/** Some backend other than the asking one waits for a lock: the consumer has reached the held row. */
export const someoneWaitsOnLock = async (stack: Stack) =>
  (
    await stack.sql`select count(*)::int as n from pg_stat_activity
      where wait_event_type = 'Lock' and pid <> pg_backend_pid()`
  )[0].n > 0;

import type { Sql } from "@commerce/shared/platform/database";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import type { Metrics } from "@commerce/shared/platform/metrics";

/** The latest examples kept per provider and reason, in memory and in each stored minute. */
export const examplesKept = 5;
/** How often a replica writes what it gathered: one statement, whatever the flood (W7). */
export const flushEveryMs = 2_000;
/** Stored minutes older than this are removed (the route reads 24 hours back). */
const keepHours = 48;
/**
 * N21: orders gathered before a write is started early: the per-order groups grow with the
 * orders a flood names, so they are written in batches of at most about this many.
 */
export const ordersPerWrite = 50_000;

export type RefusalExample = {
  at: string;
  source_ip: string;
  reason: string;
  order_id: number | null;
};

type Group = {
  provider: string;
  reason: string;
  count: number;
  firstAt: string;
  lastAt: string;
  /** Newest first, at most `examplesKept`. */
  examples: RefusalExample[];
};

/** N21: one order's refusals of one provider and reason: its own count, first and latest examples. */
type OrderGroup = Group & { orderId: number; first: RefusalExample[] };

const newestFirst = (a: RefusalExample, b: RefusalExample) =>
  a.at < b.at ? 1 : a.at > b.at ? -1 : 0;

/**
 * V4: the notifications a provider route refused (401, 400, 413, 415), seen and not only counted,
 * at no database write per request. Each refusal adds to its provider's and reason's group in
 * memory (a count, the first and last time, the latest few examples; the reasons are a fixed set,
 * so memory is bounded whatever arrives), and every `flushEveryMs` one statement adds the groups
 * to `payments.refused_notifications`, one row per provider, reason and minute, shared by every
 * replica (an upsert adds to it). A failed write keeps the groups for the next one.
 */
export class RefusalTally {
  private groups = new Map<string, Group>();
  /** N21: per order named, so a flood naming other orders never touches an order's examples. */
  private orderGroups = new Map<string, OrderGroup>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private flushing: Promise<void> | undefined;
  private flushes = 0;
  private readonly counted;

  constructor(
    private readonly sql: Sql,
    private readonly logger: Logger,
    metrics: Metrics,
  ) {
    this.counted = metrics.counter(
      "notifications_refused_total",
      "V4: notifications a provider route refused (401, 400, 413, 415), by provider and reason",
      ["provider", "reason"],
    );
  }

  /** One refusal: counted now, written with the next batch. */
  add(provider: string, reason: string, seen: { sourceIp: string; orderId: number | null }) {
    this.counted.inc({ provider, reason });
    const at = new Date().toISOString();
    const example = { at, source_ip: seen.sourceIp, reason, order_id: seen.orderId };
    this.merge({ provider, reason, count: 1, firstAt: at, lastAt: at, examples: [example] });
    if (seen.orderId !== null) {
      this.mergeOrder({
        orderId: seen.orderId,
        provider,
        reason,
        count: 1,
        firstAt: at,
        lastAt: at,
        examples: [example],
        first: [example],
      });
      if (this.orderGroups.size >= ordersPerWrite) void this.flush();
    }
  }

  private mergeOrder(group: OrderGroup) {
    const key = `${group.orderId}\u0000${group.provider}\u0000${group.reason}`;
    const known = this.orderGroups.get(key);
    if (!known) {
      this.orderGroups.set(key, group);
      return;
    }
    known.count += group.count;
    if (group.firstAt < known.firstAt) known.firstAt = group.firstAt;
    if (group.lastAt > known.lastAt) known.lastAt = group.lastAt;
    known.examples = [...group.examples, ...known.examples]
      .sort(newestFirst)
      .slice(0, examplesKept);
    known.first = [...known.first, ...group.first]
      .sort((a, b) => newestFirst(b, a))
      .slice(0, examplesKept);
  }

  private merge(group: Group) {
    const key = `${group.provider}\u0000${group.reason}`;
    const known = this.groups.get(key);
    if (!known) {
      this.groups.set(key, { ...group, examples: group.examples.slice(0, examplesKept) });
      return;
    }
    known.count += group.count;
    if (group.firstAt < known.firstAt) known.firstAt = group.firstAt;
    if (group.lastAt > known.lastAt) known.lastAt = group.lastAt;
    known.examples = [...group.examples, ...known.examples]
      .sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0))
      .slice(0, examplesKept);
  }

  start() {
    this.timer ??= setInterval(() => void this.flush(), flushEveryMs);
    this.timer.unref?.();
  }

  /** Stops the timer and writes what is left (O7: a shutdown loses no refusal it counted). */
  async stop() {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /**
   * Writes the gathered groups in one statement (and the orders' in one more); one write at a
   * time, and a flush asked for during one writes what came since once that one is done.
   */
  flush(): Promise<void> {
    const next = (this.flushing ?? Promise.resolve()).then(() => this.write());
    const tracked = next.finally(() => {
      if (this.flushing === tracked) this.flushing = undefined;
    });
    this.flushing = tracked;
    return tracked;
  }

  private async write() {
    if (this.groups.size === 0 && this.orderGroups.size === 0) return;
    const groups = [...this.groups.values()];
    this.groups = new Map();
    const orderGroups = [...this.orderGroups.values()];
    this.orderGroups = new Map();
    let written = false;
    const column = <T>(pick: (group: Group) => T) => groups.map(pick);
    const sql = this.sql;
    try {
      if (groups.length > 0)
        await sql`
        insert into payments.refused_notifications as r
          (provider, reason, minute, count, first_at, last_at, examples)
        select provider, reason, date_trunc('minute', last_at::timestamptz), count,
          first_at::timestamptz, last_at::timestamptz, examples::jsonb
        from unnest(
          ${column((g) => g.provider)}::text[], ${column((g) => g.reason)}::text[],
          -- postgres.js cannot send a timestamptz[] or jsonb[] of text; the casts are per row.
          ${column((g) => g.count)}::bigint[], ${column((g) => g.firstAt)}::text[],
          ${column((g) => g.lastAt)}::text[],
          ${column((g) => JSON.stringify(g.examples))}::text[]
        ) as g(provider, reason, count, first_at, last_at, examples)
        on conflict (provider, reason, minute) do update set
          count = r.count + excluded.count,
          first_at = least(r.first_at, excluded.first_at),
          last_at = greatest(r.last_at, excluded.last_at),
          examples = (
            select coalesce(jsonb_agg(e.value order by e.value->>'at' desc), '[]'::jsonb)
            from (
              select value from jsonb_array_elements(excluded.examples || r.examples)
              order by value->>'at' desc limit ${examplesKept}
            ) as e
          )`;
      written = true;
      if (orderGroups.length > 0) await this.writeOrders(orderGroups);
      // Now and then, the minutes and orders no one reads any more.
      if (this.flushes++ % 1800 === 0) {
        await sql`delete from payments.refused_notifications
          where minute < now() - make_interval(hours => ${keepHours})`;
        await sql`delete from payments.order_refusals
          where last_at < now() - make_interval(hours => ${keepHours})`;
      }
    } catch (error) {
      if (!written) for (const group of groups) this.merge(group);
      for (const group of orderGroups) this.mergeOrder(group);
      this.logger.warn("refused notifications not written; kept for the next try", {
        groups: groups.length,
        orders: orderGroups.length,
        ...describeError(error),
      });
    }
  }

  /** N21: each order's groups added to its rows, in one statement. */
  private async writeOrders(groups: OrderGroup[]) {
    const column = <T>(pick: (group: OrderGroup) => T) => groups.map(pick);
    await this.sql`
      insert into payments.order_refusals as r
        (order_id, provider, reason, count, first_at, last_at, first_examples, latest_examples)
      select order_id, provider, reason, count, first_at::timestamptz, last_at::timestamptz,
        first_examples::jsonb, latest_examples::jsonb
      from unnest(
        ${column((g) => g.orderId)}::bigint[], ${column((g) => g.provider)}::text[],
        ${column((g) => g.reason)}::text[], ${column((g) => g.count)}::bigint[],
        ${column((g) => g.firstAt)}::text[], ${column((g) => g.lastAt)}::text[],
        ${column((g) => JSON.stringify(g.first))}::text[],
        ${column((g) => JSON.stringify(g.examples))}::text[]
      ) as g(order_id, provider, reason, count, first_at, last_at, first_examples, latest_examples)
      on conflict (order_id, provider, reason) do update set
        count = r.count + excluded.count,
        first_at = least(r.first_at, excluded.first_at),
        last_at = greatest(r.last_at, excluded.last_at),
        -- The first few stay the first few; the latest few are the newest of both.
        first_examples = (
          select coalesce(jsonb_agg(e.value order by e.value->>'at'), '[]'::jsonb)
          from (
            select value from jsonb_array_elements(r.first_examples || excluded.first_examples)
            order by value->>'at' limit ${examplesKept}
          ) as e
        ),
        latest_examples = (
          select coalesce(jsonb_agg(e.value order by e.value->>'at' desc), '[]'::jsonb)
          from (
            select value from jsonb_array_elements(excluded.latest_examples || r.latest_examples)
            order by value->>'at' desc limit ${examplesKept}
          ) as e
        )`;
  }
}

import type { MessageTopology } from "@commerce/shared/contract/messages";
import { describeError, type Logger } from "@commerce/shared/platform/logger";
import { and, asc, eq, lte, sql } from "drizzle-orm";
import type { Database } from "../../db";
import { orders } from "../../db/schema";
import { transition } from "./state/transition";

/**
 * L3: cancels, as `expired`, up to `limit` unpaid orders whose `expires_at` has passed, each in
 * its own transaction through the state machine's `transition` (which gives the stock back and
 * writes `orders.cancelled`). `SKIP LOCKED` lets replicas sweep side by side without taking the
 * same order, and an order paid meanwhile is no longer `created`, so it is left alone.
 * Returns how many orders it expired. It stops early, between two orders, once `stopping` says
 * so (O7: a shutdown waits for one order's transaction, not for a hundred).
 */
export async function expireDueOrders(
  db: Database,
  topology: MessageTopology,
  limit = 100,
  stopping: () => boolean = () => false,
): Promise<number> {
  let expired = 0;
  for (; expired < limit && !stopping(); expired++) {
    const moved = await db.transaction(async (tx) => {
      const [due] = await tx
        .select({ id: orders.id })
        .from(orders)
        .where(and(eq(orders.status, "created"), lte(orders.expiresAt, sql`now()`)))
        .orderBy(asc(orders.expiresAt))
        .limit(1)
        .for("update", { skipLocked: true });
      if (!due) return false;
      await transition(tx, topology, due.id, {
        to: "cancelled",
        source: "expiry",
        reason: "expired",
      });
      return true;
    });
    if (!moved) break;
  }
  return expired;
}

/**
 * Runs `expireDueOrders` on a timer: every `ttlSeconds`, at most every 15 s, so an order is
 * cancelled well within 60 s of its expiry (L3). Nothing runs when orders never expire.
 */
export class OrderExpirySweeper {
  private timer?: Timer;
  private running?: Promise<unknown>;
  private stopped = false;

  constructor(
    private readonly deps: {
      db: Database;
      topology: MessageTopology;
      logger: Logger;
      ttlSeconds: number;
      /** Called after orders expired, so the outbox relay publishes their events now. */
      outboxWritten: () => void;
    },
  ) {}

  start(): void {
    if (this.deps.ttlSeconds <= 0) return;
    const everyMs = Math.min(15, Math.max(1, this.deps.ttlSeconds)) * 1000;
    this.timer = setInterval(() => this.sweep(), everyMs);
  }

  private sweep(): void {
    if (this.running) return;
    const { db, topology, logger, outboxWritten } = this.deps;
    this.running = expireDueOrders(db, topology, 100, () => this.stopped)
      .then((expired) => {
        if (expired === 0) return;
        logger.info("orders expired", { count: expired });
        outboxWritten();
      })
      .catch((error) => logger.warn("order expiry sweep failed", describeError(error)))
      .finally(() => {
        this.running = undefined;
      });
  }

  /** Stops the timer and waits for the sweep running now, which ends after its current order. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }
}

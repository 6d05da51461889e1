import { ConflictError, HttpError } from "@commerce/shared/platform/errors";
import type { Database } from "../../db";
import { clientOf } from "../../lib/prepared";
import type { Order, OrderLine } from "./model";
import { type OrderSettings, placeOrderNow } from "./placing";

type Waiting = {
  customerId: string;
  line: OrderLine;
  resolve: (order: Order) => void;
  reject: (error: unknown) => void;
};

/**
 * L2 under a flash sale: many customers ordering one tracked product at once. Each order's
 * statement holds the product's row lock until its commit, so orders of one product go one
 * commit at a time, each waiting for the lock to pass and for the previous commit's WAL flush.
 * Here, orders of one tracked product that arrive while another of it is being placed by this
 * process wait for it and are then placed together: one transaction takes the product's lock
 * once and runs their statements one after another (pipelined on its connection), and one
 * commit ends them all. Each order is still its own statement, checked against the stock its
 * predecessors left in arrival order, so the stock stays exact (no oversell; a buyer is
 * refused only when the stock left cannot cover their order) and a refusal (409) or an unknown
 * product (404) is that order's alone. No order waits when nothing of its product is in
 * flight: a product ordered now and then is placed as before, in one statement.
 */
export class HotProductOrders {
  private readonly running = new Map<number, number>();
  private readonly queues = new Map<number, Waiting[]>();
  /** Products seen with tracked stock; untracked ones take no lock and need no batching. */
  private readonly tracked = new Set<number>();

  constructor(
    private readonly db: Database,
    private readonly settings: OrderSettings,
    private readonly maxBatch = 200,
  ) {}

  /** Places a one-line order (no hold limit applies to it), batched when its product is hot. */
  place(customerId: string, line: OrderLine, oneLine: boolean): Promise<Order> {
    const id = line.product_id;
    const busy = (this.running.get(id) ?? 0) > 0 || this.queues.has(id);
    if (oneLine && busy && this.tracked.has(id))
      return new Promise((resolve, reject) => {
        const queue = this.queues.get(id);
        if (queue) queue.push({ customerId, line, resolve, reject });
        else {
          this.queues.set(id, [{ customerId, line, resolve, reject }]);
          void this.drain(id);
        }
      });
    return this.alone(customerId, line, oneLine);
  }

  private async alone(customerId: string, line: OrderLine, oneLine: boolean): Promise<Order> {
    const id = line.product_id;
    this.running.set(id, (this.running.get(id) ?? 0) + 1);
    try {
      const { order, tracked } = await placeOrderNow(
        this.db,
        this.settings,
        customerId,
        [line],
        oneLine,
      );
      this.remember(id, tracked);
      return order;
    } catch (error) {
      // Only a tracked product is refused for its stock.
      if (error instanceof ConflictError) this.remember(id, true);
      throw error;
    } finally {
      const left = (this.running.get(id) ?? 1) - 1;
      if (left > 0) this.running.set(id, left);
      else this.running.delete(id);
    }
  }

  private remember(id: number, tracked: boolean) {
    if (!tracked) this.tracked.delete(id);
    // Bounded: a product forgotten is placed alone until it is seen hot again.
    else if (!this.tracked.has(id)) {
      if (this.tracked.size >= 10_000) this.tracked.clear();
      this.tracked.add(id);
    }
  }

  /** Places the product's waiting orders, a batch per transaction, until none is left. */
  private async drain(id: number) {
    for (;;) {
      const queue = this.queues.get(id) ?? [];
      const batch = queue.splice(0, this.maxBatch);
      if (batch.length === 0) {
        this.queues.delete(id);
        return;
      }
      await this.placeBatch(id, batch);
    }
  }

  private async placeBatch(id: number, batch: Waiting[]) {
    let settled: PromiseSettledResult<{ order: Order; tracked: boolean }>[];
    try {
      settled = await this.db.transaction(async (tx) => {
        // The product's row lock, once for the batch (its statements take it again: held).
        await clientOf(tx)`select 1 from api.products where id = ${id} for no key update`;
        const results = await Promise.allSettled(
          batch.map((w) => placeOrderNow(tx, this.settings, w.customerId, [w.line], true)),
        );
        // A refusal (404, 409) is an answer; anything else failed a statement, and PostgreSQL
        // would end the transaction's COMMIT as a ROLLBACK: roll back and place each alone.
        for (const result of results)
          if (result.status === "rejected" && !(result.reason instanceof HttpError))
            throw result.reason;
        return results;
      });
    } catch {
      // A statement failed and took the transaction with it: each order is placed alone, so
      // one order's failure is its own.
      for (const w of batch) this.alone(w.customerId, w.line, true).then(w.resolve, w.reject);
      return;
    }
    // Answered after the commit: a 201 names an order that exists.
    for (const [i, result] of settled.entries()) {
      if (result.status === "fulfilled") {
        this.remember(id, result.value.tracked);
        batch[i].resolve(result.value.order);
      } else batch[i].reject(result.reason);
    }
  }
}

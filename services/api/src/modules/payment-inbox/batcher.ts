import type { MessageTopology, PaymentMessage } from "@commerce/shared/contract/messages";
import { GroupCommitQueue } from "@commerce/shared/platform/group-commit";
import type { TraceContext } from "@commerce/shared/platform/tracing";
import type { Database } from "../../db";
import { transitionMany } from "../orders/state/transition";
import { paymentRefOf, providerOf, sourceOf } from "./apply";

/** A payment for the batch path, with its trace, so the `orders.paid` it writes continues the webhook's (O8). */
export type BatchedPayment = { message: PaymentMessage; trace?: TraceContext };

/**
 * M2, M5: the common case, orders in `created` each paid in full by a notification not seen
 * before, for a whole batch in one statement (its own transaction): the state machine's
 * `transitionMany` locks the payable orders in id order, this inbox remembers each notification as
 * processed in the same statement, and the orders move to `paid` with their `orders.paid`
 * messages and timeline entries, as `transition` would move them. One round trip for many payments
 * instead of about ten for each is what lets the consumer keep up with a burst. Returns the
 * notification ids that paid their order; any other payment (a duplicate, a mismatch, an unknown
 * or unpayable order, a second payment of an order in the batch) changes nothing here and is
 * left to `applyPaymentMessage`. Each order is locked before its notification is recorded, as
 * there, so replicas applying the same notification cannot deadlock.
 */
export async function payInOneStatement(
  db: Database,
  topology: MessageTopology,
  batch: BatchedPayment[],
): Promise<Set<string>> {
  // One payment per order: a second one for the same order is for the general path to judge.
  const firstPerOrder = new Map<number, BatchedPayment>();
  for (const payment of batch)
    if (!firstPerOrder.has(payment.message.order_id))
      firstPerOrder.set(payment.message.order_id, payment);
  const payments = [...firstPerOrder.values()];
  // T1: a statement moves orders for one source; what reconciliation found (rare) goes alone.
  const moved = new Set<number>();
  for (const source of ["webhook", "reconciliation"] as const) {
    const ofSource = payments.filter(({ message }) => sourceOf(message) === source);
    if (ofSource.length > 0)
      for (const id of await payBySource(db, topology, source, ofSource)) moved.add(id);
  }
  return new Set(
    payments.filter((p) => moved.has(p.message.order_id)).map((p) => p.message.notification_id),
  );
}

function payBySource(
  db: Database,
  topology: MessageTopology,
  source: "webhook" | "reconciliation",
  payments: BatchedPayment[],
) {
  return transitionMany(
    db,
    topology,
    { to: "paid", source },
    payments.map(({ message, trace }) => ({
      orderId: message.order_id,
      notificationId: message.notification_id,
      trace,
      paymentRef: paymentRefOf(message),
      provider: providerOf(message),
      expect: { amount: message.amount, currency: message.currency },
    })),
    {
      // M2: the idempotent consumer's memory, in the statement of the move it records.
      claim: (sql) => sql`
        insert into api.processed_notifications (notification_id, order_id, outcome)
        select notification_id, order_id, 'paid' from movable
        on conflict do nothing
        returning order_id`,
    },
  );
}

/**
 * Gathers the payments that arrive while a batch statement runs into the next one (M5,
 * `GroupCommitQueue`): at a trickle each payment is its own batch, right away; in a burst the
 * batches grow, so the statements per payment fall as the load rises. At most `statements`
 * batches run at once.
 */
export class PaymentBatcher {
  private readonly queue: GroupCommitQueue<BatchedPayment, boolean>;

  constructor(db: Database, topology: MessageTopology, maxBatch = 64, statements = 3) {
    this.queue = new GroupCommitQueue(
      async (batch) => {
        const paid = await payInOneStatement(db, topology, batch);
        return batch.map((payment) => paid.has(payment.message.notification_id));
      },
      { concurrency: statements, maxBatch, gather: true },
    );
  }

  /** Whether this payment paid its order (false: it needs `applyPaymentMessage`). */
  pay(payment: BatchedPayment): Promise<boolean> {
    return this.queue.add(payment);
  }
}

import type { EventSource, MessageTopology } from "@commerce/shared/contract/messages";
import type { Principal } from "@commerce/shared/platform/auth/token-verifier";
import {
  ConflictError,
  ForbiddenError,
  NotFoundError,
  ValidationError,
} from "@commerce/shared/platform/errors";
import { offsetOf, type PageRequest } from "@commerce/shared/platform/http/paging";
import { and, asc, desc, eq, type SQL, sql } from "drizzle-orm";
import type { Database, Executor } from "../../db";
import { orderEvents, orders, paymentReviews } from "../../db/schema";
import { type ListTotal, listPage, listStatements } from "../../lib/list-page";
import { preparedStatements } from "../../lib/prepared";
import type { Order, OrderStatus } from "./model";
import { itemsOf, orderRow, toOrder, withItems } from "./order-rows";
import type { TimelineType } from "./state/order-events";
import { transition } from "./state/transition";

const run = preparedStatements((db) => {
  const customerId = sql.placeholder("customerId");
  const status = sql.placeholder("status");
  const read = (total: ListTotal, rowsOf: SQL) =>
    db
      .with(total)
      .select({ total: total.n, row: orders })
      .from(total)
      .leftJoin(orders, rowsOf)
      .orderBy(desc(orders.id));
  const list = (name: string, where?: SQL) =>
    listStatements(db, { table: orders, id: orders.id, order: "desc", list: name, where }, read);
  const own = eq(orders.customerId, customerId);
  const inStatus = eq(orders.status, status);
  const all = list("orders");
  const ownList = list("orders/customer", own);
  const allStatus = list("orders/status", inStatus);
  const ownStatus = list("orders/customer+status", and(own, inStatus));
  return {
    allPage: all.page.prepare("orders_page"),
    allAfter: all.after.prepare("orders_after"),
    ownPage: ownList.page.prepare("own_orders_page"),
    ownAfter: ownList.after.prepare("own_orders_after"),
    allStatusPage: allStatus.page.prepare("orders_status_page"),
    allStatusAfter: allStatus.after.prepare("orders_status_after"),
    ownStatusPage: ownStatus.page.prepare("own_orders_status_page"),
    ownStatusAfter: ownStatus.after.prepare("own_orders_status_after"),
  };
});

/** An order as its caller may see it: own, or any for admin; else 404, never 403, so ids do not leak (A4). */
export async function getOrder(db: Executor, principal: Principal, id: number): Promise<Order> {
  const row = await orderRow(db, id);
  if (!row || (!principal.admin && row.customerId !== principal.customerId))
    throw new NotFoundError(`Order ${id} does not exist`);
  return toOrder(row, await itemsOf(db, id));
}

/** T1: what happened to an order, oldest first; the owner's or any for an admin, else 404. */
export async function orderTimeline(db: Executor, principal: Principal, id: number) {
  const row = await orderRow(db, id);
  if (!row || (!principal.admin && row.customerId !== principal.customerId))
    throw new NotFoundError(`Order ${id} does not exist`);
  const entries = await db
    .select()
    .from(orderEvents)
    .where(eq(orderEvents.orderId, id))
    .orderBy(asc(orderEvents.id));
  return {
    items: entries.map((entry, i) => ({
      seq: i + 1,
      type: entry.type as TimelineType,
      at: entry.at.toISOString(),
      source: entry.source as EventSource,
      notification_id: entry.notificationId,
      actor: entry.actor,
      detail: entry.detail as Record<string, unknown>,
    })),
  };
}

/** R3, P4: own orders (all for an admin), newest first, optionally of one status. */
export async function listOrders(
  db: Database,
  principal: Principal,
  paging: PageRequest,
  status?: OrderStatus,
) {
  const scope = principal.admin ? "all" : "own";
  const filtered = status ? "Status" : "";
  const by = paging.after === undefined ? "Page" : "After";
  const customerId = principal.customerId;
  // The counter keys the triggers of migration 0006 write.
  const key = principal.admin ? (status ?? "") : status ? `${status} ${customerId}` : customerId;
  const rows = await run(db, `${scope}${filtered}${by}` as "allPage", {
    customerId,
    status,
    key,
    limit: paging.perPage,
    offset: offsetOf(paging),
    after: paging.after,
  });
  const page = listPage(rows, paging, (row) => row.id);
  return { ...page, items: await withItems(db, page.items) };
}

/** V6: what a manual refund's answer says, so nobody believes it sent money back. */
export const manualRefundNotice =
  "Recorded only: marking an order refunded sends no money back. Refund the payment with the " +
  "payment provider (its dashboard or API) if that has not been done.";

/**
 * R4, V5, V6: PATCH /api/orders/{id}. An admin may ask for any status L1 allows, with a `note`
 * (400 without one), and the move carries the admin as `actor`; marking paid an order that has
 * an open payment review is 409 naming the review (resolving it is the way). A customer may
 * only cancel their own order (anything else 403; another customer's order 404).
 */
export async function changeStatus(
  db: Database,
  topology: MessageTopology,
  principal: Principal,
  orderId: number,
  change: { status: OrderStatus; note?: string },
) {
  const to = change.status;
  if (principal.admin && change.note === undefined)
    throw new ValidationError("The request body is invalid", [
      { path: "/note", message: "an admin's move needs a note saying why (1 to 1000 characters)" },
    ]);
  return db.transaction(async (tx) => {
    if (!principal.admin) {
      const row = await orderRow(tx, orderId);
      if (!row || row.customerId !== principal.customerId)
        throw new NotFoundError(`Order ${orderId} does not exist`);
      if (to !== "cancelled")
        throw new ForbiddenError("A customer may only cancel their own order");
    }
    if (principal.admin && to === "paid") await noOpenReview(tx, orderId);
    return transition(tx, topology, orderId, {
      to,
      source: principal.admin ? "manual" : "api",
      reason: to === "cancelled" ? (principal.admin ? "admin" : "customer") : undefined,
      actor: principal.admin ? principal.customerId : undefined,
      note: change.note,
    });
  });
}

/** V6: an order with an open payment review is paid by resolving the review, never by hand. */
async function noOpenReview(tx: Executor, orderId: number) {
  const [open] = await tx
    .select({ id: paymentReviews.id, reason: paymentReviews.reason })
    .from(paymentReviews)
    .where(and(eq(paymentReviews.orderId, orderId), eq(paymentReviews.status, "open")))
    .orderBy(asc(paymentReviews.id))
    .limit(1);
  if (open)
    throw new ConflictError(
      `Order ${orderId} has an open payment review ${open.id} (${open.reason}); resolve that ` +
        "review instead of marking the order paid",
      undefined,
      "open_review",
    );
}

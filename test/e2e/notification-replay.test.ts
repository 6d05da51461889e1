import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually, unique } from "@commerce/testing/basics";
import { type PlacedOrder, type Stack, startStack, succeeded } from "@commerce/testing/processes";

setDefaultTimeout(60_000);

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.stop());

/** An operator's request to the payments service. */
async function operator(method: string, path: string, token = stack.admin) {
  const response = await fetch(`${stack.payments.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}` },
  });
  return {
    status: response.status,
    challenge: response.headers.get("www-authenticate"),
    json: (await response.json()) as any,
  };
}

/** Every payments outbox row of a notification, once all of them are published. */
const allPublished = (notificationId: string, rows: number) =>
  eventually(
    async () => {
      const found = await stack.sql`
        select message_id, published_at from payments.outbox
        where payload->>'notification_id' = ${notificationId} order by id`;
      return found.length === rows && found.every((row) => row.published_at) ? found : undefined;
    },
    15_000,
    `${rows} published message(s) of ${notificationId}`,
  );

/** Waits until the api has applied the notification again, and says with what outcome. */
const appliedAs = (notificationId: string) =>
  eventually(
    async () =>
      (
        await stack.sql`
          select outcome from api.processed_notifications where notification_id = ${notificationId}`
      )[0]?.outcome as string | undefined,
    15_000,
    `the api applying ${notificationId}`,
  );

const forget = (notificationId: string) =>
  stack.sql`delete from api.processed_notifications where notification_id = ${notificationId}`;

const apiOutboxPaid = async (order: PlacedOrder) =>
  (
    await stack.sql`
      select count(*)::int as n from api.outbox where message_id = ${`order-paid-${order.order_id}`}`
  )[0].n;

const reviewsOf = async (notificationId: string) =>
  (
    await stack.sql`
      select count(*)::int as n from api.payment_reviews where notification_id = ${notificationId}`
  )[0].n;

/** A paid order whose notification's message the api applied and the relays published. */
async function paidOrder() {
  const order = await stack.newOrder(1500);
  const notification = succeeded(order);
  expect((await stack.notify(notification)).status).toBe(200);
  await stack.paid(order.order_id);
  await allPublished(notification.id, 1);
  await eventually(async () =>
    (await stack.ordersPaidMessages(order.order_id)).length ? true : undefined,
  );
  return { order, id: notification.id };
}

describe("replaying a notification's message (api and payments as processes)", () => {
  test("V3: the operator routes take an admin token only: none is 401 with a challenge, a customer's 403", async () => {
    const { id } = await paidOrder();
    const anonymous = await fetch(`${stack.payments.url}/api/notifications/${id}`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toStartWith("Bearer");
    expect((await operator("POST", `/api/notifications/${id}/replay`, stack.customer)).status).toBe(
      403,
    );
    const listed = await operator(
      "GET",
      `/api/notifications?order_id=${(await paidOrder()).order.order_id}`,
    );
    expect(listed.status).toBe(200);
    expect(listed.json.items).toHaveLength(1);
    expect(listed.json.items[0].published_at).not.toBeNull();
  });

  test("V3: after the api lost its processed row, a replay moves nothing: one paid, one orders.paid, no review; twice too", async () => {
    const { order, id } = await paidOrder();
    await forget(id);

    const replay = await operator("POST", `/api/notifications/${id}/replay`);
    expect(replay.status).toBe(202);
    expect(replay.json.message_id).toStartWith(`${id}:replay:`);
    await allPublished(id, 2);
    expect(await appliedAs(id)).toBe("duplicate");

    // Twice more: once with the processed row back in place, once after losing it again.
    expect((await operator("POST", `/api/notifications/${id}/replay`)).status).toBe(202);
    await forget(id);
    expect((await operator("POST", `/api/notifications/${id}/replay`)).status).toBe(202);
    await allPublished(id, 4);
    expect(await appliedAs(id)).toBe("duplicate");

    // A marker notification applied after the replays shows the consumer is past them.
    const marker = await paidOrder();
    expect(await appliedAs(marker.id)).toBe("paid");
    expect(await stack.orderStatus(order.order_id)).toBe("paid");
    expect(await stack.publishedOrdersPaid(order.order_id)).toHaveLength(1);
    expect(await apiOutboxPaid(order)).toBe(1);
    expect(await reviewsOf(id)).toBe(0);

    const detail = await operator("GET", `/api/notifications/${id}`);
    expect(detail.json.message).toMatchObject({ message_id: id });
    expect(detail.json.replays).toHaveLength(3);
    expect(detail.json.replays.every((r: any) => r.published_at)).toBe(true);
  });

  test("V3: after the api's database went back to before the payment, a replay pays the order, once", async () => {
    const order = await stack.newOrder(1700);
    const notification = succeeded(order, { id: unique("evt") });
    expect((await stack.notify(notification)).status).toBe(200);
    await stack.paid(order.order_id);
    await allPublished(notification.id, 1);
    // What a restore from a backup taken before the payment looks like to the api.
    await stack.sql.begin(async (tx) => {
      await tx`delete from api.processed_notifications where notification_id = ${notification.id}`;
      await tx`delete from api.outbox where message_id = ${`order-paid-${order.order_id}`}`;
      await tx`update api.orders set status = 'created', paid_at = null where id = ${order.order_id}`;
    });

    expect((await operator("POST", `/api/notifications/${notification.id}/replay`)).status).toBe(
      202,
    );
    expect((await operator("POST", `/api/notifications/${notification.id}/replay`)).status).toBe(
      202,
    );
    await allPublished(notification.id, 3);
    await stack.paid(order.order_id);
    expect(await appliedAs(notification.id)).toBe("paid");
    const marker = await paidOrder();
    expect(await appliedAs(marker.id)).toBe("paid");
    expect(await apiOutboxPaid(order)).toBe(1);
    expect(await reviewsOf(notification.id)).toBe(0);
  });
});

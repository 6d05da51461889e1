import { describe, expect, test } from "bun:test";
import { connectDatabase } from "@commerce/shared/platform/database";
import { testDatabaseUrl, token } from "@commerce/testing/basics";
import { paymentsForFile } from "@commerce/testing/in-process";
import { uniqueOrderId } from "@commerce/testing/payments-requests";
import postgres from "postgres";
import { GroupCommit, type StoreInput, StoreTimeoutError } from "./group-commit";

const payments = await paymentsForFile();

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/** One notification paying `orderId`, as the intake hands it to the store. */
const input = (id: string, orderId: number, rawBody = `{"id":"${id}"}`): StoreInput => ({
  provider: "generic",
  notification: {
    id,
    event: "payment.succeeded",
    orderId,
    paymentRef: id,
    amount: 1999,
    currency: "USD",
    message: "payment.succeeded",
  },
  rawBody,
  sourceIp: "192.0.2.7",
  traceparent,
  messageSubject: payments.topology.payments.orderPaid,
});

type Stored = { id: string; received_at: string; source_ip: string; traceparent: string | null };
const storedRows = (ids: string[]) =>
  payments.sql<Stored[]>`
    select id, received_at::text, source_ip, traceparent from payments.notifications
    where id = any(${ids}::text[]) order by id`;
const outboxFor = (ids: string[]) =>
  payments.sql<{ message_id: string; headers: unknown }[]>`
    select message_id, headers from payments.outbox where message_id = any(${ids}::text[])
    order by id`;

/**
 * A group committer with one statement at a time: the first request goes alone, at once, and
 * everything asked for while it commits is the next group, one statement.
 */
function committer() {
  let kicks = 0;
  const group = new GroupCommit(payments.sql, { statements: 1, outboxWritten: () => kicks++ });
  return { group, kicks: () => kicks };
}

describe("group commit of the intake", () => {
  test("W5, W8: concurrent distinct and repeated notifications in one group: each new one stored once with its outbox row, every repeat answered duplicate, all after one commit", async () => {
    const { group, kicks } = committer();
    const orderId = uniqueOrderId();
    const ids = Array.from({ length: 6 }, (_, i) => `grp_${orderId}_${i}`);
    const already = `grp_${orderId}_stored_before`;
    await group.store([input(already, orderId)]);
    await Bun.sleep(1); // its statement's turn is over: the opener below goes alone

    const first = group.store([input(`grp_${orderId}_opener`, orderId)]);
    // All asked for while the opener commits: one group, with repeats of its own and of `already`.
    const requests = [
      ...ids.map((id) => [input(id, orderId)]),
      [input(ids[0], orderId)],
      [input(ids[1], orderId)],
      [input(already, orderId)],
      [input(ids[2], orderId), input(ids[2], orderId)],
      ...Array.from({ length: 10 }, () => [input(ids[3], orderId)]),
    ];
    const results = await Promise.all([first, ...requests.map((r) => group.store(r))]);

    expect(results[0]).toEqual({ duplicate: false, outboxWritten: true, stored: [true] });
    const grouped = results.slice(1);
    expect(grouped.slice(0, 6).map((r) => r.duplicate)).toEqual(Array(6).fill(false));
    expect(grouped.slice(6, 9).map((r) => r.duplicate)).toEqual([true, true, true]);
    expect(grouped[9]).toEqual({ duplicate: true, outboxWritten: false, stored: [false, false] });
    expect(grouped.slice(10).every((r) => r.duplicate && !r.outboxWritten)).toBe(true);

    const rows = await storedRows(ids);
    expect(rows.map((row) => row.id)).toEqual([...ids].sort());
    // One group, one transaction: one `now()` for all of it.
    expect(new Set(rows.map((row) => row.received_at)).size).toBe(1);
    expect(
      rows.every((row) => row.source_ip === "192.0.2.7" && row.traceparent === traceparent),
    ).toBe(true);
    const outbox = await outboxFor([...ids, already]);
    expect(outbox.map((row) => row.message_id).sort()).toEqual([...ids, already].sort());
    expect(
      outbox.every((row) => (row.headers as { traceparent: string }).traceparent === traceparent),
    ).toBe(true);
    // The opener's group, the group of six, and the first one alone wrote outbox rows.
    expect(kicks()).toBe(3);
  });

  test("W5, W8, Y3: a group where one request fails: it fails alone, all of its batch unstored, and every other request of the group is stored once", async () => {
    const { group } = committer();
    const orderId = uniqueOrderId();
    const good = Array.from({ length: 4 }, (_, i) => `grp_${orderId}_good_${i}`);
    const batch = [`grp_${orderId}_batch_0`, `grp_${orderId}_batch_1`];
    const opener = group.store([input(`grp_${orderId}_opener`, orderId)]);
    // PostgreSQL refuses a NUL in text: this request's statement fails, whatever its neighbours.
    const bad = group.store([
      input(batch[0], orderId),
      input(batch[1], orderId, '{"note":"\u0000"}'),
    ]);
    const others = good.map((id) => group.store([input(id, orderId)]));
    const repeat = group.store([input(good[0], orderId)]);

    await opener;
    await expect(bad).rejects.toThrow();
    const answered = await Promise.all(others);
    expect(answered.every((r) => !r.duplicate && r.stored[0])).toBe(true);
    expect(await repeat).toMatchObject({ duplicate: true });

    expect((await storedRows(good)).map((row) => row.id)).toEqual([...good].sort());
    expect(await storedRows(batch)).toHaveLength(0);
    expect((await outboxFor(good)).map((row) => row.message_id).sort()).toEqual([...good].sort());
    expect(await outboxFor(batch)).toHaveLength(0);
  });

  test("W6: the database down fails every request of the group, so each answers 503", async () => {
    const dead = new GroupCommit(connectDatabase("postgres://root@127.0.0.1:1/none", { max: 1 }), {
      statements: 1,
    });
    const orderId = uniqueOrderId();
    const outcomes = await Promise.allSettled(
      [0, 1, 2].map((i) => dead.store([input(`grp_${orderId}_down_${i}`, orderId)])),
    );
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected"]);
  });
});

describe("X2: the intake while the database does not answer", () => {
  test("X2: a store the database does not finish in time is refused 503 (StoreTimeoutError); one still waiting for its group leaves it and is never stored; a resend of the one in flight is a duplicate", async () => {
    const locker = postgres(testDatabaseUrl, { max: 1, onnotice: () => {} });
    const held = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const transaction = locker.begin(async (tx) => {
      await tx`lock table payments.notifications in access exclusive mode`;
      held.resolve();
      await release.promise;
    });
    await held.promise;
    const group = new GroupCommit(payments.sql, { statements: 1, answerWithinMs: 300 });
    const orderId = uniqueOrderId();
    const [inFlight, waiting] = [`slow_${orderId}_a`, `slow_${orderId}_b`];
    const answers = await Promise.all([
      group.store([input(inFlight, orderId)]).catch((error) => error),
      group.store([input(waiting, orderId)]).catch((error) => error),
    ]);
    for (const answer of answers) {
      expect(answer).toBeInstanceOf(StoreTimeoutError);
      expect(answer.status).toBe(503);
    }
    release.resolve();
    await transaction;
    await locker.end({ timeout: 1 });
    // The statement in flight commits once the lock goes; the provider's resend is a duplicate.
    const resent = await group.store([input(inFlight, orderId)]);
    expect(resent.duplicate).toBe(true);
    await Bun.sleep(100);
    expect((await storedRows([inFlight, waiting])).map((row) => row.id)).toEqual([inFlight]);
  });
});

describe("what a reconciliation run found (B3)", () => {
  test("B3: a notification stored with source reconciliation keeps it, its message says so, and the operator's list filters by it; a webhook's message has no source", async () => {
    const { group } = committer();
    const orderId = uniqueOrderId();
    const found = `rec_${orderId}_found`;
    const sent = `rec_${orderId}_sent`;
    await group.store([{ ...input(found, orderId), source: "reconciliation" }]);
    await group.store([input(sent, orderId + 1)]);
    const rows = await payments.sql<{ id: string; source: string; payload: { source?: string } }[]>`
      select n.id, n.source, o.payload from payments.notifications n
      join payments.outbox o on o.message_id = n.key
      where n.id = any(${[found, sent]}::text[]) order by n.id`;
    expect(rows.map(({ id, source, payload }) => [id, source, payload.source])).toEqual([
      [found, "reconciliation", "reconciliation"],
      [sent, "webhook", undefined],
    ]);
    const admin = await token({ sub: "ops", scope: "admin" });
    const list = await payments
      .app()
      .handle(
        new Request(
          `http://localhost/api/notifications?order_id=${orderId}&source=reconciliation`,
          { headers: { authorization: `Bearer ${admin}` } },
        ),
      );
    expect(list.status).toBe(200);
    const body = (await list.json()) as { items: { id: string; source: string }[] };
    expect(body.items.map(({ id, source }) => [id, source])).toEqual([[found, "reconciliation"]]);
    const bad = await payments.app().handle(
      new Request("http://localhost/api/notifications?source=email", {
        headers: { authorization: `Bearer ${admin}` },
      }),
    );
    expect(bad.status).toBe(400);
  });
});

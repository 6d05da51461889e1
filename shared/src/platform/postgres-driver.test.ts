import { describe, expect, test } from "bun:test";
import { eventually, testDatabaseUrl, unique } from "@commerce/testing/basics";
import postgres from "postgres";
import { connectDatabase, type Sql } from "./database";

/** postgres.js's `max_pipeline` (documented, missing from its types): one query queued per connection. */
const onePerPipeline = { max_pipeline: 1 } as object;

/** A table of labels, for the rows a test's transactions and stray statements write. */
async function labelTable(observer: Sql): Promise<string> {
  const table = unique("driver_");
  await observer`create table ${observer(table)} (label text not null)`;
  return table;
}

const labels = async (observer: Sql, table: string) =>
  (await observer`select label from ${observer(table)} order by label`).map((row) => row.label);

/** The pool's connections PostgreSQL holds in a transaction no statement is running in. */
const idleInTransaction = async (observer: Sql, applicationName: string) =>
  Number(
    (
      await observer`select count(*) as n from pg_stat_activity
        where application_name = ${applicationName} and state like 'idle in transaction%'`
    )[0].n,
  );

describe("postgres.js, as installed with patches/postgres+3.4.9.patch", () => {
  test("W6, M2: a transaction whose connection dies rejects with CONNECTION_CLOSED; the process and the pool carry on (porsager/postgres#1208)", async () => {
    const sql = connectDatabase(testDatabaseUrl, { max: 2 });
    const killer = connectDatabase(testDatabaseUrl, { max: 1 });
    try {
      let pid: number | undefined;
      const transaction = sql.begin(async (tx) => {
        [{ pid }] = await tx`select pg_backend_pid() as pid`;
        await tx`select pg_sleep(5)`;
      });
      await eventually(async () => pid);
      await killer`select pg_terminate_backend(${pid as number})`;
      await expect(transaction).rejects.toMatchObject({ code: "CONNECTION_CLOSED" });
      // Unpatched, the ROLLBACK's deferred write throws here, outside any promise, and the process dies.
      await Bun.sleep(100);
      expect((await sql`select 1 as one`)[0].one).toBe(1);
    } finally {
      await Promise.all([sql.end({ timeout: 1 }), killer.end({ timeout: 1 })]);
    }
  });

  test("W6, X2: after its connection is terminated mid-statement, the pool's next query runs on the new connection, not failed with the old backend's 57P01 (porsager/postgres#1215)", async () => {
    const sql = connectDatabase(testDatabaseUrl, { max: 1 });
    const killer = connectDatabase(testDatabaseUrl, { max: 1 });
    try {
      const [{ pid }] = await sql`select pg_backend_pid() as pid`;
      const sleeping = sql`select pg_sleep(5)`.execute();
      await eventually(async () => {
        const [{ n }] = await killer`select count(*)::int as n from pg_stat_activity
          where pid = ${pid} and state = 'active'`;
        return n === 1 || undefined;
      });
      await killer`select pg_terminate_backend(${pid})`;
      await expect(sleeping).rejects.toMatchObject({ code: "CONNECTION_CLOSED" });
      expect((await sql`select 1 as one`)[0].one).toBe(1);
    } finally {
      await Promise.all([sql.end({ timeout: 1 }), killer.end({ timeout: 1 })]);
    }
  });

  // Unpatched, BEGIN written as the query that fills a connection's pipeline skipped the hook that
  // reserves the connection for the transaction: with one connection, begin() failed with a
  // TypeError and the next query ran inside the transaction it left open (never committed); with
  // more, begin() failed with UNSAFE_TRANSACTION and the connection went back to the pool idle in
  // that transaction.
  for (const max of [1, 2]) {
    test(`M2, W6: a transaction whose BEGIN filled the connection's pipeline is still reserved: no other query runs inside it (porsager/postgres#1189; pool of ${max})`, async () => {
      const applicationName = unique("pipeline");
      // One query in flight and one behind it per connection: a BEGIN sent while every connection
      // runs a query is the one that fills a pipeline.
      const sql = postgres(testDatabaseUrl, {
        max,
        ...onePerPipeline,
        onnotice: () => {},
        connection: { application_name: applicationName },
      });
      const observer = connectDatabase(testDatabaseUrl, { max: 1 });
      const table = await labelTable(observer);
      try {
        await Promise.all(Array.from({ length: max }, () => sql`select 1`));
        const running = Array.from({ length: max }, () => sql`select pg_sleep(0.3)`.execute());
        const transaction = sql.begin(async (tx) => {
          await tx`insert into ${tx(table)} values ('rolled back')`;
          await Bun.sleep(100);
          throw new Error("the order cannot be paid");
        });
        const outside = sql`insert into ${sql(table)} values ('autocommitted')`.execute();
        const [, settled] = await Promise.all([
          Promise.all(running),
          Promise.allSettled([transaction, outside]),
        ]);
        // The statement outside the transaction is committed; the transaction's insert is not.
        expect(await labels(observer, table)).toEqual(["autocommitted"]);
        expect(await idleInTransaction(observer, applicationName)).toBe(0);
        expect(settled.map((outcome) => outcome.status)).toEqual(["rejected", "fulfilled"]);
        expect((settled[0] as PromiseRejectedResult).reason.message).toBe(
          "the order cannot be paid",
        );
      } finally {
        await sql.end({ timeout: 1 });
        await observer`drop table ${observer(table)}`;
        await observer.end({ timeout: 1 });
      }
    });
  }

  // Unpatched, the callback's statements after the kill ran on the pool's replacement connection:
  // inside the transaction another begin() had open there, and the callback's automatic COMMIT
  // committed that transaction's partial writes before it rolled back (porsager/postgres#1204).
  test("M2, W6: after its connection is terminated, a transaction's later statements reject with CONNECTION_CLOSED and never run on the new connection (porsager/postgres#1215)", async () => {
    const sql = connectDatabase(testDatabaseUrl, { max: 1 });
    const observer = connectDatabase(testDatabaseUrl, { max: 1 });
    const table = await labelTable(observer);
    try {
      let pid: number | undefined;
      let waiting: number | undefined;
      let resumeFirst = () => {};
      const firstResumed = new Promise<void>((resolve) => (resumeFirst = resolve));
      let late: Promise<unknown> | undefined;
      const first = sql.begin(async (tx) => {
        [{ pid }] = await tx`select pg_backend_pid() as pid`;
        await tx`insert into ${tx(table)} values ('first, before the kill')`;
        waiting = pid;
        await firstResumed; // e.g. waiting for a payment provider's answer
        late = tx`insert into ${tx(table)} values ('first, after the kill')`;
        await late;
      });
      first.catch(() => {});
      await eventually(async () => waiting);
      await observer`select pg_terminate_backend(${pid as number})`;
      await expect(first).rejects.toMatchObject({ code: "CONNECTION_CLOSED" });

      // The pool reconnects; another transaction writes on the new connection, then fails.
      let inserted = false;
      let failSecond = () => {};
      const secondFails = new Promise<void>((resolve) => (failSecond = resolve));
      const second = sql.begin(async (tx) => {
        await tx`insert into ${tx(table)} values ('second, rolled back')`;
        inserted = true;
        await secondFails;
        throw new Error("the order cannot be paid");
      });
      await eventually(async () => inserted || undefined);

      resumeFirst();
      await eventually(async () => (late ? true : undefined));
      const [lateOutcome] = await Promise.allSettled([late]);
      await Bun.sleep(200); // the first callback's automatic COMMIT or ROLLBACK, if it goes out
      failSecond();
      await expect(second).rejects.toThrow("the order cannot be paid");
      // Nothing is committed: not the first transaction's rows, not the second's partial write.
      expect(await labels(observer, table)).toEqual([]);
      expect(lateOutcome).toMatchObject({
        status: "rejected",
        reason: { code: "CONNECTION_CLOSED" },
      });
      expect((await sql`select 1 as one`)[0].one).toBe(1);
    } finally {
      await sql.end({ timeout: 1 });
      await observer`drop table ${observer(table)}`;
      await observer.end({ timeout: 1 });
    }
  });

  test("M2, W6: the statements a transaction queued behind its full pipeline reject with CONNECTION_CLOSED when its connection is terminated; the next query on the new connection succeeds (porsager/postgres#1186, #1215)", async () => {
    const sql = postgres(testDatabaseUrl, { max: 1, ...onePerPipeline, onnotice: () => {} });
    const killer = connectDatabase(testDatabaseUrl, { max: 1 });
    try {
      let pid: number | undefined;
      let statements: Promise<PromiseSettledResult<unknown>[]> | undefined;
      const transaction = sql.begin(async (tx) => {
        [{ pid }] = await tx`select pg_backend_pid() as pid`;
        // One runs, one is pipelined behind it, the rest wait in the transaction's own queue.
        statements = Promise.allSettled([
          tx`select pg_sleep(5)`,
          tx`select 2`,
          tx`select 3`,
          tx`select 4`,
        ]);
        await statements;
      });
      transaction.catch(() => {});
      await eventually(async () => statements && pid);
      await killer`select pg_terminate_backend(${pid as number})`;
      await expect(transaction).rejects.toMatchObject({ code: "CONNECTION_CLOSED" });
      const settled = await Promise.race([statements, Bun.sleep(2000).then(() => "pending")]);
      expect(settled).not.toBe("pending");
      for (const outcome of settled as PromiseSettledResult<unknown>[])
        expect(outcome).toMatchObject({
          status: "rejected",
          reason: { code: "CONNECTION_CLOSED" },
        });
      // The killed backend's FATAL error stays with the old connection.
      expect((await sql`select 1 as one`)[0].one).toBe(1);
    } finally {
      await Promise.all([sql.end({ timeout: 1 }), killer.end({ timeout: 1 })]);
    }
  });
});

import { afterAll, describe, expect, test } from "bun:test";
import { testDatabaseUrl } from "@commerce/testing/basics";
import { Elysia } from "elysia";
import { connectDatabase, databaseIsUp, databaseUnavailable } from "./database";
import { problemErrors } from "./http/problems";
import { createLogger } from "./logger";

/** A pool whose every transaction is read-only: what a standby answers a write with (25006). */
const readOnlyPool = () =>
  connectDatabase(
    `${testDatabaseUrl}${testDatabaseUrl.includes("?") ? "&" : "?"}options=-c%20default_transaction_read_only%3Don`,
    {
      max: 1,
    },
  );
const ordinary = connectDatabase(testDatabaseUrl, { max: 2 });
afterAll(() => ordinary.end());

const failureOf = (query: Promise<unknown>) => query.then(() => undefined).catch((error) => error);

/** An app whose one route throws `error`, answered by the problem plugin of both services. */
const answerTo = async (error: unknown) => {
  const app = new Elysia()
    .use(problemErrors({ logger: createLogger("error", {}, () => {}) }))
    .get("/boom", () => {
      throw error;
    });
  const response = await app.handle(new Request("http://localhost/boom"));
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    body: await response.text(),
  };
};

describe("X2: what a lost or read-only database answers", () => {
  test("X2: a write refused as read-only (25006), a connection ended by the server (57P01) and a refused connection are 503 problem+json, never 500; a bad statement is not", async () => {
    const pool = readOnlyPool();
    const readOnlyError = await failureOf(pool`create temporary sequence x2_write`);
    expect(readOnlyError.code).toBe("25006");

    const victim = connectDatabase(testDatabaseUrl, { max: 1 });
    const [{ pid }] = await victim`select pg_backend_pid() as pid`;
    await ordinary`select pg_terminate_backend(${pid})`;
    const terminated = await failureOf(victim`select 1`);
    const refused =
      await failureOf(connectDatabase("postgres://root@127.0.0.1:1/none", { max: 1 })`select 1`);
    const syntax = await failureOf(ordinary`select from where`);

    for (const error of [readOnlyError, terminated, refused]) {
      expect(databaseUnavailable(error)).toBe(true);
      const answer = await answerTo(error);
      expect(answer.status).toBe(503);
      expect(answer.type).toBe("application/problem+json");
      expect(answer.body).not.toContain("read-only");
    }
    expect(databaseUnavailable(syntax)).toBe(false);
    expect((await answerTo(syntax)).status).toBe(500);
    await Promise.all([pool.end(), victim.end({ timeout: 1 })]);
  });

  test("X2: a pooled connection refused a write as read-only is closed, so the next query connects again (and finds the primary)", async () => {
    const pool = readOnlyPool();
    const [{ pid: before }] = await pool`select pg_backend_pid() as pid`;
    await failureOf(pool`create temporary sequence x2_write`);
    const [{ pid: after }] = await pool`select pg_backend_pid() as pid`;
    expect(after).not.toBe(before);
    // An ordinary error keeps its connection.
    await failureOf(pool`select from where`);
    const [{ pid: still }] = await pool`select pg_backend_pid() as pid`;
    expect(still).toBe(after);
    await pool.end();
  });

  test("X2: a query waiting for its connection fails (CONNECTION_CLOSED, 503) once every host closed on it, instead of waiting for a primary (postgres.js #1174)", async () => {
    // What HAProxy with no primary behind it does: accept, then close at once.
    const closing = Array.from({ length: 2 }, () =>
      Bun.listen({
        hostname: "127.0.0.1",
        port: 0,
        socket: { open: (socket) => void socket.end(), data: () => {} },
      }),
    );
    const hosts = closing.map((server) => `127.0.0.1:${server.port}`).join(",");
    const pool = connectDatabase(`postgres://root@${hosts}/none`, { max: 1 });
    const outcome = await Promise.race([
      failureOf(pool`select 1`),
      Bun.sleep(10_000).then(() => "still waiting"),
    ]);
    expect(outcome).not.toBe("still waiting");
    expect((outcome as { code: string }).code).toBe("CONNECTION_CLOSED");
    expect(databaseUnavailable(outcome)).toBe(true);
    await pool.end({ timeout: 1 });
    for (const server of closing) server.stop(true);
  });

  test("O2, X2: /ready's database check is up on a primary, down on a closed port", async () => {
    expect(await databaseIsUp(ordinary)).toBe(true);
    const closed = connectDatabase("postgres://root@127.0.0.1:1/none", { max: 1 });
    expect(await databaseIsUp(closed)).toBe(false);
    await closed.end();
  });
});

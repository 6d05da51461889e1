import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  eventually,
  freePort,
  jwtSecret,
  testNatsUrl,
  unique,
  webhookSecret,
} from "@commerce/testing/basics";
import { root, type ServiceName, serviceCommand } from "@commerce/testing/launch";
import { PrivatePostgres } from "@commerce/testing/postgres-server";

setDefaultTimeout(60_000);

const binaries = process.env.E2E_BINARIES === "1";
const rightPassword = unique("right-password");
const wrongPassword = "wrong-secret-47";
/** A PostgreSQL of this file's own that asks for a password, as a deployed one does. */
const postgres = new PrivatePostgres({ password: rightPassword });
beforeAll(() => postgres.start());
afterAll(() => postgres.dispose());

const services: ServiceName[] = ["api", "payments"];

/** One service from source (or its binary), started with `databaseUrl`, its output kept. */
async function launch(name: ServiceName, databaseUrl: string) {
  const port = await freePort();
  const child = Bun.spawn(serviceCommand(name, binaries), {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? "",
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      NATS_URL: testNatsUrl,
      NATS_PREFIX: unique("start"),
      AUTH_JWT_SECRET: jwtSecret,
      PAYMENT_WEBHOOK_SECRETS: webhookSecret,
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  const output = Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]).then(([out, err]) => out + err);
  return { child, port, output };
}

/** The lines a process wrote, each parsed as JSON (a line that is not JSON fails the test). */
const linesOf = (output: string) =>
  output
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      try {
        return JSON.parse(line);
      } catch {
        return { notJson: line };
      }
    });

describe("O6, X2: a database the service cannot use at start is one log line, never a stack", () => {
  for (const name of services) {
    test(`O6, X2: ${name}: a wrong database password stops it (exit 1) with one JSON line naming the cause, without the password or a stack`, async () => {
      const url = postgres.url.replace(encodeURIComponent(rightPassword), wrongPassword);
      const { child, output } = await launch(name, url);
      const code = await Promise.race([child.exited, Bun.sleep(30_000).then(() => "running")]);
      if (code === "running") child.kill("SIGKILL");
      const text = await output;
      expect({ code, text }).toEqual({ code: 1, text: expect.any(String) });
      expect(text).not.toContain(wrongPassword);
      expect(text).not.toMatch(/^\s+at /m);
      expect(text).not.toContain("node_modules");
      const lines = linesOf(text);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        level: "error",
        service: name,
        msg: `${name} cannot start: the database refused the password in DATABASE_URL`,
        error_code: "28P01",
      });
    });

    test(`O6, X2: ${name}: an unreachable database at start is one warning line; the service waits, alive and not ready, every route 503 problem+json logged and counted (E5)`, async () => {
      const closed = `postgres://root:${wrongPassword}@127.0.0.1:${await freePort()}/none`;
      let gatedId = "";
      const { child, port, output } = await launch(name, closed);
      try {
        await eventually(
          async () =>
            (await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.ok
              ? true
              : undefined,
          20_000,
          `${name} /health`,
        );
        expect((await fetch(`http://127.0.0.1:${port}/ready`)).status).toBe(503);
        // E5: every other route is 503 problem+json, with its id, a request line and a sample.
        const gated = await fetch(`http://127.0.0.1:${port}/no-such-route`);
        expect(gated.status).toBe(503);
        expect(gated.headers.get("content-type")).toStartWith("application/problem+json");
        gatedId = gated.headers.get("x-request-id") ?? "";
        expect(gatedId).toMatch(/^[0-9a-f-]{36}$/);
        const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        expect(metrics).toContain('route="unmatched",status="503"');
        // Several retries go by, silently.
        await Bun.sleep(2500);
        expect(child.exitCode).toBeNull();
      } finally {
        child.kill("SIGTERM");
        await child.exited;
      }
      const text = await output;
      expect(text).not.toContain(wrongPassword);
      expect(text).not.toMatch(/^\s+at /m);
      const lines = linesOf(text);
      expect(lines.filter((l) => l.notJson)).toEqual([]);
      expect(lines.filter((l) => l.msg === "request" && l.request_id === gatedId)).toEqual([
        expect.objectContaining({ status: 503, route: "unmatched" }),
      ]);
      expect(lines.filter((l) => l.level === "warn" || l.level === "error")).toEqual([
        expect.objectContaining({
          msg: "database not writable yet; migrations will be retried",
          error_code: "ECONNREFUSED",
        }),
      ]);
    });
  }

  test("O6, X2: a database that comes up refusing the password while the service waits is one line, not one per retry", async () => {
    await postgres.stop();
    const url = postgres.url.replace(encodeURIComponent(rightPassword), wrongPassword);
    const { child, port, output } = await launch("api", url);
    try {
      await eventually(
        async () =>
          (await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.ok
            ? true
            : undefined,
        20_000,
        "api /health",
      );
      await postgres.start();
      // The retries run each second: a few of them meet the wrong password.
      await Bun.sleep(4000);
      expect((await fetch(`http://127.0.0.1:${port}/ready`)).status).toBe(503);
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill("SIGTERM");
      await child.exited;
    }
    const failures = linesOf(await output).filter((l) => l.msg === "migrations failed; retrying");
    expect(failures).toEqual([
      expect.objectContaining({
        error_code: "28P01",
        cause: "the database refused the password in DATABASE_URL",
      }),
    ]);
  });
});

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually, unique } from "@commerce/testing/basics";
import { type Stack, startStack } from "@commerce/testing/processes";
import { type RawHead, rawHead } from "@commerce/testing/raw-http";

setDefaultTimeout(60_000);

/** Set E2E_BINARIES=1 to run the compiled binaries (the harness starts them). */
const binaries = process.env.E2E_BINARIES === "1";
const metricsToken = unique("scrape-token-0123456789");

let stack: Stack;
beforeAll(async () => {
  // The request log lines are at info.
  stack = await startStack({ env: { LOG_LEVEL: "info", METRICS_TOKEN: metricsToken } });
});
afterAll(() => stack?.stop());

const services = ["api", "payments"] as const;

/** Bun's development page, or anything of it: markup, a stack, a path or a source line. */
function runtimePageIn(answer: RawHead): string[] {
  return [/<html/i, /<!doctype/i, /node_modules/, /\/work\//, /\.ts:\d+/, /\bat \w+ \(/].flatMap(
    (pattern) => (pattern.test(answer.raw) ? [String(pattern)] : []),
  );
}

/** Hosts that are not hosts; before E5 (v5) each reached Bun's development page on some path. */
const oddHosts = ["", "a b", "[::", "a@b", "a:b", "a/b", "a?b"];
/** Hosts the grammar allows that no URL parser reads (a port over 65535, a bad escape). */
const unparsableHosts = ["a:99999", "%zz"];
const pathsOf = {
  api: ["/nope", "/health", "/api/products", "/api/products/1", "/api/orders/1"],
  payments: ["/nope", "/health", "/api/webhooks/payment", "/api/notifications"],
};

describe("E5 (v5): no request reaches the runtime's own error page", () => {
  for (const name of services) {
    test(`E5 (v5): ${name}: an empty or odd Host is 400 problem+json with X-Request-Id, logged and counted, on every path`, async () => {
      const service = stack[name];
      const ids: string[] = [];
      for (const host of oddHosts)
        for (const path of pathsOf[name]) {
          const answer = await rawHead(service.port, `GET ${path} HTTP/1.1\r\nHost: ${host}`);
          const where = `${name} GET ${path} Host: ${JSON.stringify(host)}`;
          expect({ where, page: runtimePageIn(answer) }).toEqual({ where, page: [] });
          expect({ where, status: answer.status }).toEqual({ where, status: 400 });
          expect(answer.headers["content-type"]).toStartWith("application/problem+json");
          const id = answer.headers["x-request-id"];
          expect(id).toMatch(/^[0-9a-f-]{36}$/);
          expect(JSON.parse(answer.body)).toMatchObject({ status: 400, title: "Bad Request" });
          expect(JSON.parse(answer.body).detail).toContain("Host");
          ids.push(id);
        }
      // One request log line each, with the id the answer carried (O6).
      const loggedIds = () =>
        new Set(
          service
            .logLines()
            .filter((l) => l.msg === "request" && l.status === 400)
            .map((l) => l.request_id),
        );
      await eventually(
        async () => (ids.every((id) => loggedIds().has(id)) ? true : undefined),
        5000,
        "a log line per answer",
      );
      expect(ids.filter((id) => !loggedIds().has(id))).toEqual([]);
      // And a sample each in http_requests_total (O3).
      const metrics = await fetch(`${service.url}/metrics`, {
        headers: { authorization: `Bearer ${metricsToken}` },
      }).then((r) => r.text());
      const counted = metrics
        .split("\n")
        .filter((l) => l.startsWith("http_requests_total{") && /status="400"/.test(l))
        .reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
      expect(counted).toBeGreaterThanOrEqual(ids.length);
    });

    test(`E5 (v5): ${name}: a well-formed request with any Host is answered as with its own host`, async () => {
      const service = stack[name];
      // A Host the grammar allows but no URL parser reads: never a 5xx or Bun's page.
      for (const host of unparsableHosts)
        for (const path of pathsOf[name]) {
          const answer = await rawHead(service.port, `GET ${path} HTTP/1.1\r\nHost: ${host}`);
          const where = `${name} GET ${path} Host: ${host}`;
          expect({
            where,
            page: runtimePageIn(answer),
            server: (answer.status ?? 500) >= 500,
          }).toEqual({ where, page: [], server: false });
          expect(answer.headers["content-type"]).toStartWith("application/");
        }
      for (const host of ["a", "[::1]", `127.0.0.1:${service.port}`, "x.example"]) {
        const health = await rawHead(service.port, `GET /health HTTP/1.1\r\nHost: ${host}`);
        expect({ host, status: health.status }).toEqual({ host, status: 200 });
        const unknown = await rawHead(service.port, `GET /nope HTTP/1.1\r\nHost: ${host}`);
        expect({ host, status: unknown.status }).toEqual({ host, status: 404 });
        expect(unknown.headers["content-type"]).toStartWith("application/problem+json");
      }
      // Dot segments past the root, which no route matches: 404, not "GET is not served on
      // this path; it serves GET" (a 405 before).
      const dots = await rawHead(service.port, "GET /a/../../health HTTP/1.1\r\nHost: a");
      expect({ status: dots.status, body: JSON.parse(dots.body).detail }).toEqual({
        status: 404,
        body: "No such route",
      });
    });

    test(`E5 (v5): ${name}: an HTTP/1.0 request without Host (a load balancer's health check) is served on the probes' paths, 400 problem+json elsewhere, never 5xx or Bun's page`, async () => {
      const service = stack[name];
      for (const path of ["/health", "/ready"]) {
        const answer = await rawHead(service.port, `GET ${path} HTTP/1.0`);
        expect({ path, status: answer.status }).toEqual({ path, status: 200 });
        expect(answer.headers["x-request-id"]).toBeTruthy();
      }
      const elsewhere = [...pathsOf[name], "/swagger/json", "/api/orders/1/events", "/health?x=1"];
      for (const path of elsewhere.filter((p) => p !== "/health")) {
        const answer = await rawHead(service.port, `GET ${path} HTTP/1.0`);
        const where = `${name} GET ${path} HTTP/1.0`;
        expect({ where, page: runtimePageIn(answer) }).toEqual({ where, page: [] });
        expect({ where, status: answer.status }).toEqual({ where, status: 400 });
        expect(answer.headers["content-type"]).toStartWith("application/problem+json");
      }
    });

    test(`E5 (v5): ${name}: what Bun refuses before the service sees it is a bare status or a closed connection, never its page (docs/decisions.md)`, async () => {
      const port = stack[name].port;
      const refused = {
        // A method Bun's parser does not know: the connection is closed without a byte.
        unknownMethod: await rawHead(port, "FROB /health HTTP/1.1\r\nHost: a"),
        // A target that is not a path (nor `*` for OPTIONS): bare 400.
        target: await rawHead(port, "GET health HTTP/1.1\r\nHost: a"),
        // HTTP/1.1 without Host: bare 400 (RFC 9112 3.2).
        noHost: await rawHead(port, "GET /health HTTP/1.1"),
        // A version other than 1.0 and 1.1: bare 505.
        version: await rawHead(port, "GET /health HTTP/2.0\r\nHost: a"),
        // Headers over Bun's cap (64 KiB, raised from 16 KiB; E4): bare 431.
        headers: await rawHead(
          port,
          `GET /health HTTP/1.1\r\nHost: a\r\nX-Big: ${"b".repeat(70 * 1024)}`,
        ),
        // More header lines than Bun counts (198), each short: bare 431.
        headerLines: await rawHead(
          port,
          `GET /health HTTP/1.1\r\nHost: a\r\n${Array.from({ length: 200 }, (_, i) => `X-H${i}: v`).join("\r\n")}`,
        ),
      };
      for (const [what, answer] of Object.entries(refused)) {
        expect({ what, page: runtimePageIn(answer), body: answer.body }).toEqual({
          what,
          page: [],
          body: "",
        });
      }
      expect(refused.unknownMethod.raw).toBe("");
      expect(refused.target.status).toBe(400);
      expect(refused.noHost.status).toBe(400);
      expect(refused.version.status).toBe(505);
      expect(refused.headers.status).toBe(431);
      expect(refused.headerLines.status).toBe(431);
      // Just under both caps, the service answers itself.
      const many = await rawHead(
        port,
        `GET /health HTTP/1.1\r\nHost: a\r\n${Array.from({ length: 150 }, (_, i) => `X-H${i}: v`).join("\r\n")}`,
      );
      expect(many.status).toBe(200);
    });
  }

  test("E5 (v5): both services say they run in production mode when compiled, and in development mode from source", () => {
    for (const name of services) {
      const listening = stack[name].logLines().find((l) => l.msg === `${name} listening`);
      expect({ name, mode: listening?.mode }).toEqual({
        name,
        mode: binaries ? "production" : "development",
      });
    }
  });
});

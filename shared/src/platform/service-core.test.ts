import { afterAll, expect, test } from "bun:test";
import { rawHead } from "@commerce/testing/raw-http";
import { createLogger } from "./logger";
import { Metrics } from "./metrics";
import { serverOptions } from "./service-core";

const lines: string[] = [];
const metrics = new Metrics();
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  ...serverOptions(
    createLogger("info", { service: "test" }, (line) => lines.push(line)),
    metrics,
  ),
  // What no route catches: an error thrown where neither Elysia nor a Bun route handles it.
  fetch() {
    throw new Error("secret detail at /work/shared/src/x.ts:12");
  },
});
afterAll(() => server.stop(true));

test("E5 (v5): an error no route caught is 500 problem+json with X-Request-Id, one log line and a metric, never Bun's page", async () => {
  const answer = await rawHead(Number(server.port), "GET /anything HTTP/1.1\r\nHost: a");
  expect(answer.status).toBe(500);
  expect(answer.headers["content-type"]).toStartWith("application/problem+json");
  expect(JSON.parse(answer.body)).toEqual({
    type: "about:blank",
    title: "Internal Server Error",
    status: 500,
    detail: "An unexpected error occurred",
  });
  expect(answer.raw).not.toContain("secret");
  const id = answer.headers["x-request-id"];
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  const logged = lines.map((line) => JSON.parse(line)).filter((l) => l.request_id === id);
  expect(logged).toHaveLength(1);
  expect(logged[0]).toMatchObject({ level: "error", msg: "unexpected error" });
  expect(JSON.stringify(logged[0])).toContain("secret detail");
  const text = await metrics.render();
  expect(text).toContain('http_requests_total{method="unknown",route="unmatched",status="500"} 1');
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type ApiHarness, problemType, startApi } from "@commerce/testing/in-process";

let api: ApiHarness;
beforeAll(async () => {
  api = await startApi();
});
afterAll(() => api.close());

describe("U1 the console's assets", () => {
  test("U1 an unknown path under /console/assets/ is 404 problem+json, not the console page", async () => {
    for (const path of [
      "/console/assets/missing.js",
      "/console/assets/console.js.map",
      "/console/assets/old/console.css",
      "/console/assets/",
    ]) {
      const res = await api.call("GET", path);
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toBe(problemType);
      expect(res.json).toMatchObject({ status: 404, title: "Not Found" });
      expect(res.text).not.toContain("<html");
    }
  });

  test("U1 the console's own assets and its addresses still answer", async () => {
    const script = await api.call("GET", "/console/assets/console.js");
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toStartWith("text/javascript");
    const style = await api.call("GET", "/console/assets/console.css");
    expect(style.status).toBe(200);
    for (const path of ["/console", "/console/orders/1", "/console/assetsx"]) {
      const page = await api.call("GET", path);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toStartWith("text/html");
    }
  });
});

describe("N21 the console's sign-in exchange", () => {
  test("N21 (v5): /console/session is rate limited per address: past the burst a guess gets 429 with Retry-After, and a malformed body spends the budget too", async () => {
    const limited = await startApi({ env: { RATE_LIMIT_RPS: "1", RATE_LIMIT_BURST: "3" } });
    try {
      const guess = () =>
        limited.call("POST", "/console/session", { body: { code: `guess-${Math.random()}` } });
      for (let i = 0; i < 3; i++) expect((await guess()).status).toBe(401);
      const refused = await guess();
      expect(refused.status).toBe(429);
      expect(refused.headers.get("content-type")).toBe(problemType);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      // A malformed body spends the budget as well: it is no cheaper way to guess.
      expect((await limited.call("POST", "/console/session", { body: {} })).status).toBe(429);
    } finally {
      await limited.close();
    }
  });
});

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually, unique } from "@commerce/testing/basics";
import { type Stack, startStack } from "@commerce/testing/processes";

setDefaultTimeout(60_000);

/**
 * The catalogue's hot reads are Bun routes beside the app (`products/hot-reads.ts`): whether a
 * request takes them or the app's own pipeline, the caller must not be able to tell. A query
 * parameter the routes do not know (`x`) sends the same read through the app.
 */
describe("hot reads over HTTP: the same answers whichever way a read is served", () => {
  let stack: Stack;
  let category: string;
  let ids: number[];
  beforeAll(async () => {
    stack = await startStack({
      start: ["api"],
      env: { LOG_LEVEL: "info", RATE_LIMIT_RPS: "50", RATE_LIMIT_BURST: "500" },
    });
    category = unique("cat");
    ids = [];
    for (let i = 0; i < 3; i++) {
      const made = await stack.callApi("POST", "/api/products", stack.admin, {
        name: `Lamp ${i}`,
        price: 1000 + i,
        category,
      });
      ids.push(made.json.id);
    }
  });
  afterAll(() => stack?.stop());

  const ask = async (method: string, path: string, requestId: string) => {
    const response = await fetch(`${stack.api.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${stack.customer}`, "x-request-id": requestId },
    });
    return {
      status: response.status,
      body: await response.text(),
      contentType: response.headers.get("content-type"),
      requestId: response.headers.get("x-request-id"),
      headerNames: [...response.headers.keys()].filter((name) => name !== "date").sort(),
      policy: response.headers.get("ratelimit-policy"),
    };
  };
  const throughApp = (path: string) => `${path}${path.includes("?") ? "&" : "?"}x=1`;

  test("P1, P4, O5, E1: GET and HEAD of a product, an unknown product and list pages answer alike, each logged", async () => {
    const paths = [
      `/api/products/${ids[0]}`,
      "/api/products/2147483000",
      `/api/products?category=${category}&per_page=2`,
      `/api/products?category=${category}&per_page=2&page=2`,
      `/api/products?category=${category}&after=${ids[0]}`,
    ];
    // The first read verifies the token; from then on it is remembered (A5), as the lane needs.
    await ask("GET", paths[0], unique("warm"));
    for (const method of ["GET", "HEAD"])
      for (const path of paths) {
        const [lane, app] = [unique("lane"), unique("app")];
        const viaLane = await ask(method, path, lane);
        const viaApp = await ask(method, throughApp(path), app);
        expect({ method, path, ...viaLane, requestId: undefined }).toEqual({
          method,
          path,
          ...viaApp,
          requestId: undefined,
        });
        expect([viaLane.requestId, viaApp.requestId]).toEqual([lane, app]);
        expect(viaLane.policy).toBe('"default";q=500;w=10');
        const route = path.includes("?") ? "/api/products" : "/api/products/:id";
        const [laneLine, appLine] = await eventually(async () => {
          const lines = stack.api.logLines().filter((line) => line.msg === "request");
          const found = [lane, app].map((id) => lines.find((line) => line.request_id === id));
          return found.every(Boolean) ? found : undefined;
        });
        expect(laneLine).toMatchObject({ method, route, status: viaLane.status });
        expect(appLine).toMatchObject({ method, route, status: viaApp.status });
      }
  });

  test("O3: reads the lane serves are counted in the route's histogram", async () => {
    const count = async () => {
      const text = await (await fetch(`${stack.api.url}/metrics`)).text();
      const line = text
        .split("\n")
        .find(
          (row) =>
            row.startsWith("http_request_duration_seconds_count{") &&
            row.includes('method="GET"') &&
            row.includes('route="/api/products/:id"'),
        );
      return Number(line?.split(" ").at(-1) ?? 0);
    };
    const before = await count();
    for (let i = 0; i < 5; i++) await ask("GET", `/api/products/${ids[1]}`, unique("count"));
    expect(await count()).toBe(before + 5);
  });
});

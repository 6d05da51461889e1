import { describe, expect, test } from "bun:test";
import { RateLimiter } from "@commerce/shared/platform/rate-limit";
import { unique } from "@commerce/testing/basics";
import { apiForFile } from "@commerce/testing/in-process";
import { hotReads } from "./hot-reads";

const { api } = await apiForFile();
const customer = await api.customer();
// A5: verified once, so remembered; the lane takes only a remembered token.
await api.deps.verifyToken(customer.token);

const fallbackStatus = 299;

/** The lane over the api's own deps (or some replaced), with a fallback that only records. */
function lane(replace: Partial<Parameters<typeof hotReads>[0]> = {}) {
  const fellBack: string[] = [];
  const routes = hotReads({ ...api.deps, ...replace }, (request) => {
    fellBack.push(request.url);
    return new Response(null, { status: fallbackStatus });
  });
  const ask = async (path: string, init: RequestInit = {}, token = customer.token) => {
    const request = new Request(`http://localhost${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...init.headers },
    });
    const route = path.startsWith("/api/products/") ? "/api/products/:id" : "/api/products";
    const response = await routes[route].GET(request);
    const text = await response.text();
    return { status: response.status, headers: response.headers, json: text && JSON.parse(text) };
  };
  return { ask, fellBack };
}

const requestLines = (id: string) =>
  api.logLines.map((line) => JSON.parse(line)).filter((line) => line.request_id === id);

describe("hot reads: the catalogue's reads outside Elysia (issue 30)", () => {
  test("P1, O5, O6: a plain product read is answered by the lane with the app's body and headers, and logged", async () => {
    const made = await api.product();
    const { ask, fellBack } = lane();
    const id = unique("req");
    const answer = await ask(`/api/products/${made.id}`, { headers: { "x-request-id": id } });
    const app = await api.call("GET", `/api/products/${made.id}`, { token: customer.token });

    expect(fellBack).toEqual([]);
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({ ...made, stock: null });
    expect(answer.json).toEqual(app.json);
    expect(answer.headers.get("content-type")).toBe(app.headers.get("content-type"));
    expect(answer.headers.get("x-request-id")).toBe(id);
    expect(answer.headers.get("traceparent")).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    expect(requestLines(id)).toMatchObject([
      { msg: "request", method: "GET", route: "/api/products/:id", status: 200 },
    ]);
  });

  test("P1, E1: an unknown product is the app's 404 problem+json, logged with its status", async () => {
    const { ask, fellBack } = lane();
    const id = unique("req");
    const answer = await ask("/api/products/2147483600", { headers: { "x-request-id": id } });
    const app = await api.call("GET", "/api/products/2147483600", { token: customer.token });

    expect(fellBack).toEqual([]);
    expect(answer.status).toBe(404);
    expect(answer.headers.get("content-type")).toBe("application/problem+json");
    expect(answer.headers.get("x-request-id")).toBe(id);
    expect(answer.json).toEqual(app.json);
    expect(requestLines(id)).toMatchObject([{ route: "/api/products/:id", status: 404 }]);
  });

  test("P1, P4: plain list queries are answered by the lane exactly as the app answers them", async () => {
    const category = unique("cat");
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await api.product({ category }));
    const { ask, fellBack } = lane();
    for (const query of [
      `?category=${category}`,
      `?category=${category}&per_page=2&page=2`,
      `?per_page=2&category=${category}&page=3`,
      `?category=${category}&page=9`,
      `?category=${category}&per_page=2&after=${made[1].id}`,
      "?per_page=1",
      "",
    ]) {
      const answer = await ask(`/api/products${query}`);
      const app = await api.call("GET", `/api/products${query}`, { token: customer.token });
      expect({ query, status: answer.status, body: answer.json }).toEqual({
        query,
        status: 200,
        body: app.json,
      });
    }
    expect(fellBack).toEqual([]);
  });

  test("A5, N9, E4, X2: a request that is not plain goes to the app before the lane does anything", async () => {
    const made = await api.product();
    const cases: [string, RequestInit?, string?][] = [
      [`/api/products/${made.id}`, {}, await api.admin()], // a token never verified
      [`/api/products/${made.id}`, {}, "not.a.token"],
      [`/api/products/0${made.id}`],
      [`/api/products/%31`],
      ["/api/products/2147483648"],
      ["/api/products/-1"],
      [`/api/products/${made.id}?fields=name`],
      [`/api/products/${made.id}`, { headers: { "content-type": "application/json" } }],
      [`/api/products/${made.id}`, { headers: { "x-big": "x".repeat(17 * 1024) } }],
      ["/api/products?category=a%20b"],
      ["/api/products?category="],
      ["/api/products?category=a+b"],
      ["/api/products?page=0"],
      ["/api/products?page=1&page=2"],
      ["/api/products?per_page=101"],
      ["/api/products?page=1000001"],
      ["/api/products?after=x"],
      ["/api/products?sort=name"],
      ["/api/products?page"],
    ];
    const { ask, fellBack } = lane();
    const linesBefore = api.logLines.length;
    for (const [path, init, token] of cases) {
      const answer = await ask(path, init, token);
      expect({ path, status: answer.status }).toEqual({ path, status: fallbackStatus });
    }
    expect(fellBack).toHaveLength(cases.length);
    // Nothing was logged or counted for them by the lane: the app logs them.
    expect(api.logLines.length).toBe(linesBefore);

    const starting = lane({ migrated: () => false });
    expect((await starting.ask(`/api/products/${made.id}`)).status).toBe(fallbackStatus);
    expect(starting.fellBack).toHaveLength(1);
  });

  test("N11: on the lane a caller's budget is taken, and a spent one is 429 with Retry-After and the quota headers", async () => {
    const made = await api.product();
    const { ask, fellBack } = lane({
      rateLimiter: new RateLimiter({ ratePerSecond: 1, burst: 2 }),
    });
    const first = await ask(`/api/products/${made.id}`);
    const second = await ask(`/api/products/${made.id}`);
    const third = await ask(`/api/products/${made.id}`);

    expect(fellBack).toEqual([]);
    expect([first.status, second.status, third.status]).toEqual([200, 200, 429]);
    expect(first.headers.get("ratelimit-policy")).toBe('"default";q=2;w=2');
    expect(first.headers.get("ratelimit")).toMatch(/^"default";r=1;t=\d+$/);
    expect(third.headers.get("content-type")).toBe("application/problem+json");
    expect(third.headers.get("retry-after")).toBe("1");
    expect(third.headers.get("ratelimit")).toMatch(/^"default";r=0;t=\d+$/);
    expect(third.json).toMatchObject({ status: 429, title: "Too Many Requests" });
  });
});

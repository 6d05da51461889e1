import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually, unique } from "@commerce/testing/basics";
import { type Stack, startStack } from "@commerce/testing/processes";
import { type RawAnswer, rawRequest } from "@commerce/testing/raw-http";

setDefaultTimeout(60_000);

/**
 * E6 over HTTP, on a listening api: every request goes through the one pipeline
 * (`shared/src/platform/http/pipeline.ts`), so each spelling of a target a client can send gets
 * one answer: the targets the fuzzer and the security review sent (a raw `#`, an odd `Host`),
 * percent-escapes and dot segments. Written on a raw socket, as `fetch` would rewrite them.
 */
describe("E6: one answer for every target a client can send", () => {
  let stack: Stack;
  let port: number;
  let host: string;
  let id: number;
  let category: string;
  beforeAll(async () => {
    stack = await startStack({ start: ["api"], env: { LOG_LEVEL: "info" } });
    port = Number(new URL(stack.api.url).port);
    host = `127.0.0.1:${port}`;
    category = unique("cat");
    const made = await stack.callApi("POST", "/api/products", stack.admin, {
      name: "Lamp",
      price: 1000,
      category,
    });
    id = made.json.id;
  });
  afterAll(() => stack?.stop());

  const ask = (target: string, options: { host?: string; token?: string | null } = {}) =>
    rawRequest(port, "GET", target, {
      host: options.host ?? host,
      ...(options.token === null
        ? {}
        : { authorization: `Bearer ${options.token ?? stack.customer}` }),
      "x-request-id": unique("e6"),
    });
  /** What a caller can compare: status, media type and body (ids and dates differ by nature). */
  const seen = ({ status, headers, body }: RawAnswer) => ({
    status,
    type: headers["content-type"],
    body: JSON.parse(body),
  });

  test("E6, P2: a product's percent-escapes and dot segments are the plain target's answer, with or without a token", async () => {
    const digits = String(id);
    const spellings = [
      `/api/products/${id}`,
      `/api/products/%3${digits[0]}${digits.slice(1)}`,
      `/api/products/./${id}`,
      `/api/x/../products/${id}`,
      `/api/products/${id}/.`,
      `http://${host}/api/products/${id}`,
    ];
    const plain = seen(await ask(spellings[0]));
    expect(plain).toMatchObject({ status: 200, body: { id, category } });
    for (const target of spellings) {
      expect({ target, ...seen(await ask(target)) }).toEqual({ target, ...plain });
      // The credentials step reads the path the router reads: none of these is open.
      expect({ target, status: (await ask(target, { token: null })).status }).toEqual({
        target,
        status: 401,
      });
    }
  });

  test("E6, P1: a list page's percent-escaped query is the plain query's answer", async () => {
    const plain = seen(await ask(`/api/products?category=${category}&per_page=5`));
    expect(plain.status).toBe(200);
    expect(plain.body.items).toHaveLength(1);
    const escaped = category.replace(/[a-z]/, (letter) => `%${letter.charCodeAt(0).toString(16)}`);
    expect(seen(await ask(`/api/products?category=${escaped}&per_%70age=5`))).toEqual(plain);
  });

  test("E6, E1: a raw # in the target and an odd Host are one 400 problem+json, logged, on every path", async () => {
    const refused: Array<[string, string | undefined]> = [
      [`/api/products/${id}#x`, undefined],
      [`/api/products/${id}?#x`, undefined],
      [`/api/products?category=${category}#x`, undefined],
      ["/api/nothing-here#x", undefined],
      [`/api/products/${id}`, "a/b"],
      [`/api/products/${id}`, `${host}/api/products/${id}`],
      [`/api/products/${id}`, "x?y"],
      [`/api/products/${id}`, "x#y"],
      [`/api/products/${id}`, ""],
      [`/api/products/${id}`, "[::1"],
      ["/health", "a/b"],
    ];
    for (const [target, oddHost] of refused) {
      const answer = await ask(target, { host: oddHost });
      expect({
        target,
        oddHost,
        status: answer.status,
        type: answer.headers["content-type"],
      }).toEqual({ target, oddHost, status: 400, type: "application/problem+json" });
      const requestId = answer.headers["x-request-id"];
      expect(requestId).toBeTruthy();
      const line = await eventually(async () =>
        stack.api.logLines().find((row) => row.msg === "request" && row.request_id === requestId),
      );
      expect(line).toMatchObject({ method: "GET", status: 400 });
    }
    // A Host that is a host (any name, as behind a proxy) is no different from the address.
    expect(seen(await ask(`/api/products/${id}`, { host: "shop.example:8080" }))).toEqual(
      seen(await ask(`/api/products/${id}`)),
    );
  });
});

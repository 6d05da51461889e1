/**
 * The fourth security review's text attacks (issue 29), against a listening api: N18, N9, N15.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { unique } from "@commerce/testing/basics";
import { type ApiHarness, startApi } from "@commerce/testing/in-process";
import { webhookEndpoints } from "@commerce/testing/webhook-endpoints";

setDefaultTimeout(60_000);

let api: ApiHarness;
let apiUrl: string;
let admin: string;
beforeAll(async () => {
  api = await startApi();
  api.app.listen({ port: 0, hostname: "127.0.0.1" });
  apiUrl = `http://127.0.0.1:${api.app.server?.port}`;
  admin = await api.admin();
});
// Every endpoint here should be refused; one that was not is deleted at the end all the same.
const endpoints = webhookEndpoints(() => api.sql);
afterAll(async () => {
  await endpoints.clear();
  await api?.close();
});

const send = async (method: string, path: string, body?: unknown) => {
  const response = await fetch(`${apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = { status: response.status, json: (await response.json()) as any };
  return path === "/api/webhook-endpoints" ? endpoints.kept(answer) : answer;
};

/** Characters that make a one-line text read differently from what it is (N18). */
const invisible = [
  ...[0x202a, 0x202b, 0x202c, 0x202d, 0x202e],
  ...[0x2066, 0x2067, 0x2068, 0x2069],
  ...[0x2028, 0x2029, 0xfeff],
  // (v5) marks that print nothing: soft hyphen, ALM, ZWSP, LRM, RLM, word joiner, invisible times.
  ...[0x00ad, 0x061c, 0x200b, 0x200e, 0x200f, 0x2060, 0x2062],
].map((code) => String.fromCodePoint(code));

describe("N18: one-line texts", () => {
  test("N18: names, categories, descriptions, urls and path text refuse bidi controls, U+2028, U+2029 and U+FEFF (400)", async () => {
    for (const char of invisible) {
      const label = `U+${char.codePointAt(0)?.toString(16)}`;
      const product = await send("POST", "/api/products", {
        name: `invoice${char}fdp.exe`,
        price: 1,
        category: "c",
      });
      expect({ label, status: product.status }).toEqual({ label, status: 400 });
      const category = await send("POST", "/api/products", {
        name: "Mug",
        price: 1,
        category: `c${char}`,
      });
      expect({ label, status: category.status }).toEqual({ label, status: 400 });
      const endpoint = await send("POST", "/api/webhook-endpoints", {
        url: "https://example.com/hook",
        events: ["orders.refunded"],
        description: `ops${char}`,
      });
      expect({ label, status: endpoint.status }).toEqual({ label, status: 400 });
      const url = await send("POST", "/api/webhook-endpoints", {
        url: `https://example.com/ho${char}ok`,
        events: ["orders.refunded"],
      });
      expect({ label, status: url.status }).toEqual({ label, status: 400 });
      const path = await send("GET", `/api/products?category=${encodeURIComponent(`c${char}`)}`);
      expect({ label, status: path.status }).toEqual({ label, status: 400 });
    }
  });

  test("N18: letters of every script, emoji and U+200D joiners are kept as sent", async () => {
    for (const name of [
      "كوب قهوة",
      "ספל קפה",
      "咖啡杯",
      "कॉफ़ी मग",
      "Кружка",
      "👩‍👩‍👧 mug",
      "🏳️‍🌈",
      "e\u0301clair",
      // A subdivision flag (England): tag characters U+E0067... spell it.
      "\u{1f3f4}\u{e0067}\u{e0062}\u{e0065}\u{e006e}\u{e0067}\u{e007f} mug",
      // Persian needs the zero-width non-joiner.
      "می\u200cخواهم",
    ]) {
      const created = await send("POST", "/api/products", {
        name,
        price: 1,
        category: unique("c"),
      });
      expect(created.status).toBe(201);
      expect(created.json.name).toBe(name);
    }
  });
});

describe("N15: operators' texts", () => {
  test("N15, N9: an endpoint description or an order note, whatever its bytes, is stored as sent or 400, never a 500", async () => {
    const product = await api.product();
    const customer = await api.customer();
    const placed = await fetch(`${apiUrl}/api/orders`, {
      method: "POST",
      headers: { authorization: `Bearer ${customer.token}`, "content-type": "application/json" },
      body: JSON.stringify({ product_id: product.id, qty: 1 }),
    });
    const { order_id } = (await placed.json()) as { order_id: number };
    const raw = async (method: string, path: string, body: string) => {
      const response = await fetch(`${apiUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
        body,
      });
      if (path !== "/api/webhook-endpoints") return response.status;
      return endpoints.kept({ status: response.status, json: await response.json() }).status;
    };
    for (const bad of ["\\u0000", "\\ud800", "\\u0007", "\\u202e"]) {
      const description = `{"url":"https://example.com/hook","events":["orders.refunded"],"description":"a${bad}b"}`;
      expect(await raw("POST", "/api/webhook-endpoints", description)).toBe(400);
      const note = `{"status":"cancelled","note":"a${bad}b"}`;
      expect(await raw("PATCH", `/api/orders/${order_id}`, note)).toBeLessThan(500);
    }
    // Bytes that are not UTF-8 in the body are 400 too, not stored as U+FFFD.
    const bytes = new Uint8Array([
      ...new TextEncoder().encode('{"status":"cancelled","note":"'),
      0xff,
      0xfe,
      ...new TextEncoder().encode('"}'),
    ]);
    const status = (
      await fetch(`${apiUrl}/api/orders/${order_id}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
        body: bytes,
      })
    ).status;
    expect(status).toBe(400);
  });
});

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { signPayload } from "@commerce/shared/contract/signature";
import { webhookSecret as secret } from "@commerce/testing/basics";
import type { PaymentsHarness } from "@commerce/testing/in-process";
import fc from "fast-check";
import { expectWellFormed, numRuns, privatePayments } from "./support";

setDefaultTimeout(60_000);

const tolerance = 300;
const { payments, rows } = await privatePayments();

const now = () => Math.floor(Date.now() / 1000);
const notification = () =>
  JSON.stringify({
    event: "payment.succeeded",
    order_id: 1 + Math.floor(Math.random() * 1e12),
    amount: 1999,
    currency: "USD",
    id: `evt_${crypto.randomUUID()}`,
  });
const hexOf = (header: string) => header.slice(header.indexOf("v1=") + 3);
const hexString = (length: number) =>
  fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: length, maxLength: length });

async function post(
  app: ReturnType<PaymentsHarness["app"]>,
  body: Uint8Array | string,
  headers: Headers,
) {
  headers.set("content-type", "application/json");
  const response = await app.handle(
    new Request("http://localhost/api/webhooks/payment", { method: "POST", headers, body }),
  );
  await rows.after(response.status);
  await expectWellFormed(response);
  return response.status;
}

const signed = (signature: string) => new Headers({ "x-signature": signature });

describe("payments: signature attacks (W2)", () => {
  test("W2: a captured request replayed within the tolerance stores nothing new; replayed outside it is 401", async () => {
    const app = payments.app({ webhook: { secrets: [secret], toleranceSeconds: 1 } });
    const body = notification();
    const header = signPayload(body, secret, now());
    expect(await post(app, body, signed(header))).toBe(200);
    const again = await app.handle(
      new Request("http://localhost/api/webhooks/payment", {
        method: "POST",
        headers: { "content-type": "application/json", "x-signature": header },
        body,
      }),
    );
    expect(await again.json()).toEqual({ received: true, duplicate: true });
    await rows.after(again.status);
    await Bun.sleep(2_100);
    expect(await post(app, body, signed(header))).toBe(401);
  });

  test("W2: a timestamp further than the tolerance either way is 401; within it, 200", async () => {
    const app = payments.app();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.integer({ min: -tolerance + 2, max: tolerance - 2 }),
          fc.integer({ min: tolerance + 2, max: 10 * tolerance }),
          fc.integer({ min: -10 * tolerance, max: -tolerance - 2 }),
          fc.constantFrom(1e9, 4e9, -now()),
        ),
        async (offset) => {
          const body = notification();
          const status = await post(app, body, signed(signPayload(body, secret, now() + offset)));
          expect(status).toBe(Math.abs(offset) < tolerance ? 200 : 401);
        },
      ),
      { numRuns },
    );
  });

  test("W2: any byte of the body changed after signing is 401 and changes no row", async () => {
    const app = payments.app();
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.integer({ min: 1, max: 255 }), async (at, flip) => {
        const body = new TextEncoder().encode(notification());
        const header = signPayload(body, secret, now());
        body[at % body.length] ^= flip;
        expect(await post(app, body, signed(header))).toBe(401);
      }),
      { numRuns },
    );
  });

  test("W2: truncated, extended, upper-case or otherwise altered hex is 401", async () => {
    const app = payments.app();
    const alter = fc.oneof(
      fc.integer({ min: 0, max: 63 }).map((n) => (hex: string) => hex.slice(0, n)),
      fc
        .integer({ min: 1, max: 8 })
        .chain((n) => hexString(n))
        .map((extra) => (hex: string) => hex + extra),
      fc.constant((hex: string) => hex.toUpperCase()),
      fc.constant((hex: string) => hex.replace(/[a-f]/, (c) => c.toUpperCase())),
      fc.constant((hex: string) => `0x${hex}`),
      fc.constant((hex: string) => ` ${hex.slice(0, 32)} ${hex.slice(32)}`),
      fc.constant((hex: string) => Buffer.from(hex, "hex").toString("base64")),
    );
    await fc.assert(
      fc.asyncProperty(alter, async (change) => {
        const body = notification();
        const header = signPayload(body, secret, now());
        const hex = hexOf(header);
        // An upper-case change of a hex with no letter changes nothing; skip that vacuous case.
        fc.pre(change(hex) !== hex);
        expect(await post(app, body, signed(header.replace(hex, change(hex))))).toBe(401);
      }),
      { numRuns },
    );
  });

  test("W2: several v1 entries are accepted when one of them is right, and only then", async () => {
    const app = payments.app();
    await fc.assert(
      fc.asyncProperty(
        fc.array(hexString(64), { minLength: 1, maxLength: 6 }),
        fc.nat(),
        fc.boolean(),
        async (wrong, at, includeRight) => {
          const body = notification();
          const t = now();
          const right = hexOf(signPayload(body, secret, t));
          const hexes = [...wrong];
          if (includeRight) hexes.splice(at % (hexes.length + 1), 0, right);
          const header = [`t=${t}`, ...hexes.map((h) => `v1=${h}`)].join(",");
          expect(await post(app, body, signed(header))).toBe(includeRight ? 200 : 401);
        },
      ),
      { numRuns },
    );
  });

  test("W2: header injection: a second X-Signature, extra items, whitespace tricks and control characters are 401 unless the header is a well-formed valid signature", async () => {
    const app = payments.app();
    const tricks: Array<(header: string, t: number, hex: string) => Headers> = [
      // Two X-Signature headers arrive joined with ", ": two timestamps are malformed.
      (header) =>
        new Headers([
          ["x-signature", header],
          ["x-signature", `t=${now()},v1=${"0".repeat(64)}`],
        ]),
      (header) =>
        new Headers([
          ["x-signature", `t=1,v1=${"0".repeat(64)}`],
          ["x-signature", header],
        ]),
      (header) =>
        new Headers([
          ["x-signature", header],
          ["x-signature", header],
        ]),
      (_, t, hex) => signed(`t=${t};v1=${hex}`),
      (_, t, hex) => signed(`t=${t} v1=${hex}`),
      (_, t, hex) => signed(`t=${t},v1=${hex},t=${t}`),
      (_, t, hex) => signed(`t=${t}\tv1=${hex}`),
      (_, t, hex) => signed(`t=${t},v1=${hex}\u00ff`),
      (_, t, hex) => signed(`T=${t},V1=${hex}`),
      (_, t, hex) => signed(`t=+${t},v1=${hex}`),
      (_, t, hex) => signed(`t=${t}.0,v1=${hex}`),
      (_, t, hex) => signed(`t=0x${t.toString(16)},v1=${hex}`),
      (_, t, hex) => signed(`t=${t}e0,v1=${hex}`),
      (_, t, hex) => signed(`v1=${hex},t=${t},${"x=y,".repeat(2000)}`),
      (_, t, hex) =>
        new Headers([
          ["x-signature", `t=${t}`],
          ["x-signature-v1", hex],
        ]),
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...tricks.keys()), async (which) => {
        const body = notification();
        const t = now();
        const header = signPayload(body, secret, t);
        expect(await post(app, body, tricks[which](header, t, hexOf(header)))).toBe(401);
      }),
      { numRuns: Math.min(numRuns, 64) },
    );
  });

  test("W2: whitespace around items and an unknown scheme beside the right v1 are still a valid signature", async () => {
    const app = payments.app();
    const body = notification();
    const t = now();
    const hex = hexOf(signPayload(body, secret, t));
    expect(await post(app, body, signed(` t=${t} , v0=abc , v1=${hex} `))).toBe(200);
  });
});

describe("payments: raw HTTP on a listening server (W1, W2)", () => {
  let server: ReturnType<ReturnType<PaymentsHarness["app"]>["listen"]>;
  let port = 0;
  beforeAll(() => {
    server = payments.app().listen({ port: 0, hostname: "127.0.0.1" });
    port = server.server?.port ?? 0;
  });
  afterAll(() => server?.stop());

  /** Sends bytes as they are, reads the status line, and closes. */
  async function raw(request: string): Promise<number | "closed"> {
    const answer = Promise.withResolvers<string>();
    let received = "";
    const socket = await Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        data(_, chunk) {
          received += chunk.toString("latin1");
          if (received.includes("\r\n")) answer.resolve(received);
        },
        close() {
          answer.resolve(received);
        },
      },
    });
    socket.write(request);
    const timeout = setTimeout(() => answer.resolve(received), 5_000);
    const text = await answer.promise;
    clearTimeout(timeout);
    socket.end();
    const status = text.match(/^HTTP\/1\.1 (\d{3})/)?.[1];
    return status ? Number(status) : "closed";
  }

  test("W2, W1: CR/LF, NUL and obs-fold in X-Signature, and request smuggling with two lengths, are never accepted and change no row", async () => {
    const body = notification();
    const t = now();
    const header = signPayload(body, secret, t);
    const head = (lines: string[], payload = body) =>
      `POST /api/webhooks/payment HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${lines.join("\r\n")}\r\n\r\n${payload}`;
    const length = `Content-Length: ${Buffer.byteLength(body)}`;
    const attacks = [
      head([length, `X-Signature: t=${t},\r\n v1=${hexOf(header)}`]),
      head([length, `X-Signature: t=${t},v1=${"0".repeat(64)}\nX-Signature: ${header}`]),
      head([length, `X-Signature: ${header}\u0000`]),
      head([length, `X-Signature: t=${t},v1=${"0".repeat(64)}\r`]),
      head([length, `Content-Length: ${Buffer.byteLength(body) + 5}`, `X-Signature: ${header}`]),
      head([length, "Transfer-Encoding: chunked", `X-Signature: ${header}`]),
      head([`Content-Length: 0`, `X-Signature: ${header}`], ""),
    ];
    for (const attack of attacks) {
      const status = await raw(attack);
      expect({ attack, accepted: status === 200 }).toEqual({ attack, accepted: false });
      expect(status === "closed" || status < 500).toBe(true);
    }
    await rows.after(400);
    // The same request, well formed, is accepted: the refusals above are the attacks'.
    expect(await raw(head([length, `X-Signature: ${header}`]))).toBe(200);
    await rows.after(200);
  });
});

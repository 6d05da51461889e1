import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { signPayload } from "@commerce/shared/contract/signature";
import { isCleanText } from "@commerce/shared/platform/http/fields";
import { webhookSecret as secret } from "@commerce/testing/basics";
import fc from "fast-check";
import {
  brokenBody,
  expectWellFormed,
  headerValue,
  hostileObjectText,
  numRuns,
  oddContentType,
  privatePayments,
} from "./support";

setDefaultTimeout(120_000);

const { app, rows } = await privatePayments();

const now = () => Math.floor(Date.now() / 1000);

/** A webhook request; signed with the right secret over exactly these bytes unless told otherwise. */
function webhook(
  body: Uint8Array | string,
  { signature, headers = {} }: { signature?: string | null; headers?: Record<string, string> } = {},
) {
  const h: Record<string, string> = {
    "content-type": "application/json",
    "content-length": String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength),
    ...headers,
  };
  const signed = signature === undefined ? signPayload(body, secret, now()) : signature;
  if (signed !== null) h["x-signature"] = signed;
  return app.handle(
    new Request("http://localhost/api/webhooks/payment", { method: "POST", headers: h, body }),
  );
}

const example =
  '{"event":"payment.succeeded","order_id":42,"amount":1999,"currency":"USD","id":"evt_1"}';
const keys = ["event", "order_id", "amount", "currency", "id"];

const safeInt = (v: unknown, min: number) => Number.isSafeInteger(v) && (v as number) >= min;
/** N9: well-formed text without control characters; `event`'s length counted in code points. */
const storable = (v: unknown, max: number, length = (s: string) => s.length) =>
  typeof v === "string" && length(v) >= 1 && length(v) <= max && isCleanText(v);
const codePoints = (s: string) => [...s].length;

/** W3, as the contract words it. */
function validNotification(v: unknown): boolean {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const n = v as Record<string, unknown>;
  return (
    storable(n.event, 100, codePoints) &&
    safeInt(n.order_id, 1) &&
    safeInt(n.amount, 0) &&
    typeof n.currency === "string" &&
    /^[A-Z]{3}$/.test(n.currency) &&
    // W3, N10: the id becomes a Nats-Msg-Id header: printable ASCII, no space.
    (n.id === undefined || (typeof n.id === "string" && /^[\x21-\x7E]{1,255}$/.test(n.id)))
  );
}

describe("payments: hostile input, property-based", () => {
  test("W3, W1, E1: signed random and boundary JSON is never a 5xx, a 2xx only when W3 holds, and a rejection changes no row", async () => {
    await fc.assert(
      fc.asyncProperty(hostileObjectText(keys, example), async (body) => {
        // Each run its own notification id, so an accepted one is never a duplicate of another.
        const unique_ = body.replace('"evt_1"', JSON.stringify(`evt_${crypto.randomUUID()}`));
        const response = await webhook(unique_);
        await rows.after(response.status);
        await expectWellFormed(response);
        if (!validNotification(JSON.parse(unique_))) expect(response.status).toBe(400);
        else expect(response.status).toBe(200);
      }),
      { numRuns },
    );
  });

  test("W1, W3: signed broken, nested, oversized and non-UTF-8 bodies are 400 or 413 and change no row", async () => {
    await fc.assert(
      fc.asyncProperty(brokenBody(example, 64 * 1024), async (body) => {
        const response = await webhook(body);
        await rows.after(response.status);
        await expectWellFormed(response);
        expect([400, 413]).toContain(response.status);
      }),
      { numRuns },
    );
  });

  test("W1: any other media type is 415, even correctly signed, and changes no row", async () => {
    await fc.assert(
      fc.asyncProperty(oddContentType, async (contentType) => {
        const response = await webhook(example, { headers: { "content-type": contentType } });
        await rows.after(response.status);
        await expectWellFormed(response);
        expect(response.status).toBe(415);
      }),
      { numRuns },
    );
  });

  test("W2, W1: any body with a missing or garbage X-Signature is 401 and changes no row", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(hostileObjectText(keys, example), fc.constant(example)),
        fc.oneof(fc.constant(null), headerValue),
        async (body, signature) => {
          const response = await webhook(body, { signature });
          await rows.after(response.status);
          await expectWellFormed(response);
          expect(response.status).toBe(401);
        },
      ),
      { numRuns },
    );
  });

  test("O5, W7, E1: header garbage around a signed notification is never a 5xx", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          "x-request-id",
          "x-forwarded-for",
          "content-length",
          "accept",
          "x-anything",
          "transfer-encoding",
        ),
        headerValue,
        async (name, value) => {
          const body = example.replace("evt_1", `evt_${crypto.randomUUID()}`);
          const response = await webhook(body, { headers: { [name]: value } });
          await rows.after(response.status);
          await expectWellFormed(response);
        },
      ),
      { numRuns },
    );
  });

  test("E1, E2: unknown routes and other methods are 4xx problem+json and change no row", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("GET", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "PURGE"),
        fc.oneof(
          fc.constantFrom(
            "/api/webhooks/payment",
            "/api/webhooks/payment/1",
            "/api/webhooks",
            "/api",
            "/",
          ),
          fc
            .string({ unit: "binary", maxLength: 20 })
            .map((s) => `/api/webhooks/${encodeURIComponent(s)}`),
        ),
        async (method, path) => {
          const response = await app.handle(
            new Request(`http://localhost${path}`, {
              method,
              headers: {
                "content-type": "application/json",
                "x-signature": signPayload(example, secret, now()),
              },
              body: method === "GET" ? undefined : example,
            }),
          );
          await rows.after(response.status);
          await expectWellFormed(response);
          expect(response.status).toBeGreaterThanOrEqual(400);
        },
      ),
      { numRuns },
    );
  });
});

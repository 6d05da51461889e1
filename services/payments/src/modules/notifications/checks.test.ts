import { describe, expect, test } from "bun:test";
import { signPayload } from "@commerce/shared/contract/signature";
import { RateLimiter } from "@commerce/shared/platform/rate-limit";
import { webhookSecret as secret } from "@commerce/testing/basics";
import { type PaymentsHarness, paymentsForFile } from "@commerce/testing/in-process";
import {
  frozenLimiter,
  type NotificationBody,
  notificationRequest,
  nowSeconds,
  paymentSucceeded,
  rowsFor,
  webhookUrl,
} from "@commerce/testing/payments-requests";

const payments = await paymentsForFile();

const limit = 64 * 1024;
const orderId = () => 2_000_000_000_000 + Math.floor(Math.random() * 7e15);

/** A valid notification padded with an unknown field to exactly `size` bytes. */
function bodyOfSize(id: number, size: number): string {
  const empty = JSON.stringify({ ...paymentSucceeded(id), padding: "" });
  return JSON.stringify({ ...paymentSucceeded(id), padding: "x".repeat(size - empty.length) });
}

async function problemOf(response: Response) {
  expect(response.headers.get("content-type")).toBe("application/problem+json");
  const problem = (await response.json()) as Record<string, unknown>;
  expect(problem.status).toBe(response.status);
  return problem;
}

describe("order of checks", () => {
  test("W1: a body of exactly 64 KiB is accepted, one byte more answers 413", async () => {
    const app = payments.app();
    const fits = orderId();
    const fitting = bodyOfSize(fits, limit);
    expect(new TextEncoder().encode(fitting).byteLength).toBe(limit);
    expect((await app.handle(notificationRequest(fitting))).status).toBe(200);

    const tooBig = orderId();
    const response = await app.handle(notificationRequest(bodyOfSize(tooBig, limit + 1)));
    expect(response.status).toBe(413);
    expect((await problemOf(response)).title).toBe("Payload Too Large");
    expect(await rowsFor(payments.sql, tooBig)).toEqual({ notifications: 0, outbox: 0 });
  });

  test("W1: a declared Content-Length over the limit answers 413 before the body is read", async () => {
    const id = orderId();
    const response = await payments
      .app()
      .handle(
        notificationRequest(paymentSucceeded(id), { headers: { "content-length": "70000" } }),
      );
    expect(response.status).toBe(413);
    expect(await rowsFor(payments.sql, id)).toEqual({ notifications: 0, outbox: 0 });
  });

  test("W1: a streamed body with no Content-Length answers 413 once it passes 64 KiB", async () => {
    const chunk = new TextEncoder().encode(" ".repeat(16 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        // Far more than the limit: the reader must stop long before the end.
        if (sent++ < 1000) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const response = await payments.app().handle(
      new Request(webhookUrl, {
        method: "POST",
        headers: { "content-type": "application/json", "x-signature": "t=1,v1=00" },
        body: stream,
      }),
    );
    expect(response.status).toBe(413);
    expect(sent).toBeLessThan(1000);
  });

  test("W1: a body that is not application/json answers 415", async () => {
    const app = payments.app();
    for (const contentType of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "application/jsonx",
      "application/problem+json",
      "",
    ]) {
      const id = orderId();
      const response = await app.handle(notificationRequest(paymentSucceeded(id), { contentType }));
      expect({ contentType, status: response.status }).toEqual({ contentType, status: 415 });
      await problemOf(response);
      expect(await rowsFor(payments.sql, id)).toEqual({ notifications: 0, outbox: 0 });
    }
  });

  test("W1: application/json with parameters or in another case is accepted", async () => {
    const app = payments.app();
    for (const contentType of ["application/json; charset=utf-8", "Application/JSON"]) {
      const response = await app.handle(
        notificationRequest(paymentSucceeded(orderId()), { contentType }),
      );
      expect({ contentType, status: response.status }).toEqual({ contentType, status: 200 });
    }
  });

  test("W1: too large and the wrong media type answers 413, the earlier check", async () => {
    const id = orderId();
    const response = await payments.app().handle(
      notificationRequest(bodyOfSize(id, limit + 10), {
        contentType: "text/plain",
        signature: "forged",
      }),
    );
    expect(response.status).toBe(413);
    expect(await rowsFor(payments.sql, id)).toEqual({ notifications: 0, outbox: 0 });
  });

  test("W1: the wrong media type while rate limited answers 415, not 429", async () => {
    const app = payments.app({ rateLimiter: frozenLimiter(1) });
    expect((await app.handle(notificationRequest(paymentSucceeded(orderId())))).status).toBe(200);
    const response = await app.handle(
      notificationRequest(paymentSucceeded(orderId()), { contentType: "text/plain" }),
    );
    expect(response.status).toBe(415);
  });

  test("W1: a forged signature while rate limited answers 429, not 401", async () => {
    const app = payments.app({ rateLimiter: frozenLimiter(1) });
    expect((await app.handle(notificationRequest(paymentSucceeded(orderId())))).status).toBe(200);
    const id = orderId();
    const response = await app.handle(
      notificationRequest(paymentSucceeded(id), { signWith: "whsec_forged" }),
    );
    expect(response.status).toBe(429);
    expect(await rowsFor(payments.sql, id)).toEqual({ notifications: 0, outbox: 0 });
  });

  test("W1: a bad signature on a malformed body answers 401, not 400", async () => {
    const app = payments.app();
    const unsigned = await app.handle(notificationRequest('{"event":', { signature: null }));
    expect(unsigned.status).toBe(401);
    const forged = await app.handle(notificationRequest("[]", { signWith: "whsec_forged" }));
    expect(forged.status).toBe(401);
    const invalid = await app.handle(notificationRequest({ order_id: "x" }, { signature: "t=1" }));
    expect(invalid.status).toBe(401);
  });

  test("W1: a validly signed body that fails the schema answers 400 and writes nothing", async () => {
    const id = orderId();
    const response = await payments
      .app()
      .handle(notificationRequest(paymentSucceeded(id, { currency: "usd" })));
    expect(response.status).toBe(400);
    expect(await rowsFor(payments.sql, id)).toEqual({ notifications: 0, outbox: 0 });
  });
});

describe("signature", () => {
  const expect401 = async (request: Request, id: number) => {
    const response = await payments.app().handle(request);
    expect(response.status).toBe(401);
    const problem = await problemOf(response);
    expect(problem.title).toBe("Unauthorized");
    expect(await rowsFor(payments.sql, id)).toEqual({ notifications: 0, outbox: 0 });
    return problem;
  };

  test("W2: a notification signed with the configured secret is accepted", async () => {
    const id = orderId();
    const response = await payments.app().handle(notificationRequest(paymentSucceeded(id)));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ received: true });
    expect(await rowsFor(payments.sql, id)).toEqual({ notifications: 1, outbox: 1 });
  });

  test("W2: a signature under another secret (forged) answers 401", async () => {
    const id = orderId();
    const problem = await expect401(
      notificationRequest(paymentSucceeded(id), { signWith: "whsec_forged" }),
      id,
    );
    expect(problem.detail).toBe("The X-Signature does not match the body");
  });

  test("W2: a timestamp older than the tolerance answers 401", async () => {
    const id = orderId();
    await expect401(
      notificationRequest(paymentSucceeded(id), { timestamp: nowSeconds() - 301 }),
      id,
    );
  });

  test("W2: a timestamp too far in the future answers 401", async () => {
    const id = orderId();
    await expect401(
      notificationRequest(paymentSucceeded(id), { timestamp: nowSeconds() + 360 }),
      id,
    );
  });

  test("W2: a body changed after signing answers 401", async () => {
    const id = orderId();
    const signed = JSON.stringify(paymentSucceeded(id, { amount: 1 }));
    await expect401(
      notificationRequest(paymentSucceeded(id, { amount: 100000 }), {
        signature: signPayload(signed, secret, nowSeconds()),
      }),
      id,
    );
  });

  test("W2: a missing X-Signature header answers 401", async () => {
    const id = orderId();
    const problem = await expect401(
      notificationRequest(paymentSucceeded(id), { signature: null }),
      id,
    );
    expect(problem.detail).toBe("The X-Signature header is missing");
  });

  test("W2: a malformed X-Signature header answers 401", async () => {
    const id = orderId();
    const body = JSON.stringify(paymentSucceeded(id));
    const valid = signPayload(body, secret, nowSeconds());
    for (const signature of [
      "garbage",
      valid.replace(/v1=[0-9a-f]+/, (v1) => v1.toUpperCase().replace("V1", "v1")),
      valid.slice(0, -1),
      valid.replace("t=", "ts="),
    ])
      await expect401(notificationRequest(body, { signature }), id);
  });

  test("W2: the signature covers the raw bytes as sent, whitespace and escapes included", async () => {
    const id = orderId();
    const raw = `{ "event" : "payment.succeeded",\n  "order_id": ${id}, "amount": 5, "currency": "EUR", "note": "caf\\u00e9 ☕" }`;
    const response = await payments.app().handle(notificationRequest(raw));
    expect(response.status).toBe(200);
    const [row] =
      await payments.sql`select raw_body from payments.notifications where order_id = ${id}`;
    expect(row.raw_body).toBe(raw);
  });

  test("W2: during rotation a signature under either configured secret is accepted", async () => {
    const app = payments.app({
      webhook: { secrets: ["whsec_new_secret", secret], toleranceSeconds: 300 },
    });
    const withOld = orderId();
    const withNew = orderId();
    expect((await app.handle(notificationRequest(paymentSucceeded(withOld)))).status).toBe(200);
    expect(
      (
        await app.handle(
          notificationRequest(paymentSucceeded(withNew), { signWith: "whsec_new_secret" }),
        )
      ).status,
    ).toBe(200);
    expect((await rowsFor(payments.sql, withOld)).notifications).toBe(1);
    expect((await rowsFor(payments.sql, withNew)).notifications).toBe(1);
  });
});

describe("schema", () => {
  const send = async (body: NotificationBody | string) => {
    const response = await payments.app().handle(notificationRequest(body));
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const paths = (body: Record<string, unknown>) =>
    (body.errors as { path: string }[]).map((error) => error.path);

  test("W3: event must be a string of 1 to 100 characters", async () => {
    expect((await send(paymentSucceeded(orderId(), { event: "e".repeat(100) }))).status).toBe(200);
    for (const event of ["", "e".repeat(101), 5, null, true, ["payment.succeeded"]]) {
      const answer = await send(paymentSucceeded(orderId(), { event }));
      expect({ event, status: answer.status }).toEqual({ event, status: 400 });
      expect(paths(answer.body)).toEqual(["/event"]);
    }
  });

  test("W3: order_id must be a positive safe integer, never a numeric string", async () => {
    expect(
      (await send(paymentSucceeded(Number.MAX_SAFE_INTEGER, { id: crypto.randomUUID() }))).status,
    ).toBe(200);
    for (const order_id of [0, -1, 1.5, "5", "0x10", null, Number.MAX_SAFE_INTEGER + 1, 1e300]) {
      const answer = await send({ ...paymentSucceeded(1), order_id });
      expect({ order_id, status: answer.status }).toEqual({ order_id, status: 400 });
      expect(paths(answer.body)).toEqual(["/order_id"]);
    }
  });

  test("W3: amount must be an integer of at least 0, never a numeric string", async () => {
    expect((await send(paymentSucceeded(orderId(), { amount: 0 }))).status).toBe(200);
    expect(
      (await send(paymentSucceeded(orderId(), { amount: Number.MAX_SAFE_INTEGER }))).status,
    ).toBe(200);
    for (const amount of [-1, 0.5, "1999", null, Number.MAX_SAFE_INTEGER + 1]) {
      const answer = await send(paymentSucceeded(orderId(), { amount }));
      expect({ amount, status: answer.status }).toEqual({ amount, status: 400 });
      expect(paths(answer.body)).toEqual(["/amount"]);
    }
  });

  test("W3: currency must be three upper-case letters", async () => {
    expect((await send(paymentSucceeded(orderId(), { currency: "EUR" }))).status).toBe(200);
    for (const currency of ["usd", "US", "USDD", "U1D", "", 840, null]) {
      const answer = await send(paymentSucceeded(orderId(), { currency }));
      expect({ currency, status: answer.status }).toEqual({ currency, status: 400 });
      expect(paths(answer.body)).toEqual(["/currency"]);
    }
  });

  test("W3: id is optional, and when present a string of 1 to 255 characters", async () => {
    expect((await send(paymentSucceeded(orderId()))).status).toBe(200);
    expect((await send(paymentSucceeded(orderId(), { id: `evt_${"x".repeat(251)}` }))).status).toBe(
      200,
    );
    for (const id of ["", "x".repeat(256), 5, null]) {
      const answer = await send(paymentSucceeded(orderId(), { id }));
      expect({ id, status: answer.status }).toEqual({ id, status: 400 });
      expect(paths(answer.body)).toEqual(["/id"]);
    }
  });

  test("W3: event and id must be text the database can store: no NUL, no lone surrogate", async () => {
    for (const field of [
      { event: "payment\u0000succeeded" },
      { id: "evt_\u0000" },
      { id: "\ud800" },
    ]) {
      const answer = await send(paymentSucceeded(orderId(), field));
      expect({ field, status: answer.status }).toEqual({ field, status: 400 });
      expect(paths(answer.body)).toEqual(Object.keys(field).map((name) => `/${name}`));
    }
    const id = orderId();
    expect((await send(paymentSucceeded(id, { note: "\u0000\ud800" }))).status).toBe(200);
    const [row] =
      await payments.sql`select raw_body from payments.notifications where order_id = ${id}`;
    expect(JSON.parse(row.raw_body).note).toBe("\u0000\ud800");
  });

  test("W3: missing fields are each named in errors", async () => {
    const answer = await send({});
    expect(answer.status).toBe(400);
    expect(answer.body.detail).toBe("The request body is invalid");
    expect(answer.body.errors).toEqual([
      { path: "/event", message: "event must be a string of 1 to 100 characters" },
      { path: "/order_id", message: "order_id must be a positive integer" },
      { path: "/amount", message: "amount must be an integer of at least 0" },
      { path: "/currency", message: "currency must be three upper-case letters" },
    ]);
  });

  test("W3: a body that is not a JSON object answers 400", async () => {
    for (const raw of ["[]", '"payment.succeeded"', "null", "42"]) {
      const answer = await send(raw);
      expect({ raw, status: answer.status }).toEqual({ raw, status: 400 });
      expect(answer.body.errors).toEqual([{ path: "", message: "The body must be a JSON object" }]);
    }
  });

  test("W3: malformed JSON answers 400", async () => {
    for (const raw of ['{"event":', "", "{'event': 1}", '{"a":1}{"b":2}']) {
      const answer = await send(raw);
      expect({ raw, status: answer.status }).toEqual({ raw, status: 400 });
      expect(answer.body.detail).toBe("The request body is not valid JSON");
    }
  });

  test("W3: a body that is not UTF-8 answers 400", async () => {
    const id = orderId();
    const text = JSON.stringify(paymentSucceeded(id, { note: "?" }));
    const bytes = new TextEncoder().encode(text);
    bytes[bytes.indexOf("?".charCodeAt(0))] = 0xff;
    const response = await payments.app().handle(
      new Request("http://localhost/api/webhooks/payment", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-signature": signPayload(bytes, secret, nowSeconds()),
        },
        body: bytes,
      }),
    );
    expect(response.status).toBe(400);
    expect(await rowsFor(payments.sql, id)).toEqual({ notifications: 0, outbox: 0 });
  });

  test("W3: unknown fields are accepted and kept in the stored raw body", async () => {
    const id = orderId();
    const body = paymentSucceeded(id, { livemode: false, customer: { email: "a@example.com" } });
    expect((await send(body)).status).toBe(200);
    const [row] =
      await payments.sql`select raw_body from payments.notifications where order_id = ${id}`;
    expect(row.raw_body).toBe(JSON.stringify(body));
    expect(JSON.parse(row.raw_body).customer).toEqual({ email: "a@example.com" });
  });
});

describe("flooding", () => {
  test("W7: past the per-IP burst a client gets 429 with Retry-After", async () => {
    const app = payments.app({ rateLimiter: frozenLimiter(3) });
    for (let i = 0; i < 3; i++)
      expect((await app.handle(notificationRequest(paymentSucceeded(orderId())))).status).toBe(200);
    const id = orderId();
    const response = await app.handle(notificationRequest(paymentSucceeded(id)));
    expect(response.status).toBe(429);
    expect(response.headers.get("retry-after")).toBe("1");
    expect(response.headers.get("ratelimit-policy")).toBe('"default";q=3;w=3');
    expect(response.headers.get("ratelimit")).toBe('"default";r=0;t=3');
    expect((await problemOf(response)).title).toBe("Too Many Requests");
    expect(await rowsFor(payments.sql, id)).toEqual({ notifications: 0, outbox: 0 });
  });

  test("D4: each webhook answer carries RateLimit-Policy and RateLimit, a refused one too", async () => {
    const app = payments.app({ rateLimiter: frozenLimiter(3) });
    const accepted = await app.handle(notificationRequest(paymentSucceeded(orderId())));
    expect(accepted.status).toBe(200);
    expect(accepted.headers.get("ratelimit-policy")).toBe('"default";q=3;w=3');
    expect(accepted.headers.get("ratelimit")).toBe('"default";r=2;t=1');
    const forged = await app.handle(
      notificationRequest(paymentSucceeded(orderId()), { signWith: "whsec_forged" }),
    );
    expect(forged.status).toBe(401);
    expect(forged.headers.get("ratelimit")).toBe('"default";r=1;t=2');
    const tooLarge = await app.handle(
      new Request("http://localhost/api/webhooks/payment", {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": "70000" },
        body: "x",
      }),
    );
    expect(tooLarge.status).toBe(413);
    // N21: a 413 costs its sender a token too.
    expect(tooLarge.headers.get("ratelimit")).toBe('"default";r=0;t=3');
  });

  test("N21 (v5): 413 and 415 count against the sender's rate limit like every other refusal; they are still answered first (W1)", async () => {
    const app = payments.app({ rateLimiter: frozenLimiter(3) });
    const wrongType = () =>
      app.handle(notificationRequest(paymentSucceeded(orderId()), { contentType: "text/plain" }));
    const tooLarge = () =>
      app.handle(
        new Request("http://localhost/api/webhooks/payment", {
          method: "POST",
          headers: { "content-type": "application/json", "content-length": "70000" },
          body: "x",
        }),
      );
    expect((await wrongType()).status).toBe(415);
    expect((await tooLarge()).status).toBe(413);
    expect((await wrongType()).status).toBe(415);
    // The bucket is spent: the sender's next notification, however genuine, waits.
    const id = orderId();
    const next = await app.handle(notificationRequest(paymentSucceeded(id)));
    expect(next.status).toBe(429);
    expect(await rowsFor(payments.sql, id)).toEqual({ notifications: 0, outbox: 0 });
    // And a 415 past the limit is still a 415 (W1's order), costing nothing more.
    expect((await wrongType()).status).toBe(415);
  });

  test("W7: forged requests use up the bucket too, so a forged flood is cut off", async () => {
    const app = payments.app({ rateLimiter: frozenLimiter(2) });
    const forged = () =>
      app.handle(notificationRequest(paymentSucceeded(orderId()), { signWith: "whsec_forged" }));
    expect((await forged()).status).toBe(401);
    expect((await forged()).status).toBe(401);
    expect((await forged()).status).toBe(429);
  });

  test("W7: buckets are per source IP (X-Forwarded-For behind a trusted proxy)", async () => {
    const app = payments.app({ rateLimiter: frozenLimiter(1), trustProxy: 1 });
    const from = (ip: string) =>
      app.handle(
        notificationRequest(paymentSucceeded(orderId()), {
          headers: { "x-forwarded-for": `198.51.100.7, ${ip}` },
        }),
      );
    expect((await from("203.0.113.1")).status).toBe(200);
    expect((await from("203.0.113.1")).status).toBe(429);
    expect((await from("203.0.113.2")).status).toBe(200);
  });

  test("W7: X-Forwarded-For is ignored unless the proxy is trusted", async () => {
    const app = payments.app({ rateLimiter: frozenLimiter(1) });
    const from = (ip: string) =>
      app.handle(
        notificationRequest(paymentSucceeded(orderId()), { headers: { "x-forwarded-for": ip } }),
      );
    expect((await from("203.0.113.1")).status).toBe(200);
    expect((await from("203.0.113.2")).status).toBe(429);
  });

  test("W7: a rate of 0 turns the limit off", async () => {
    const app = payments.app({ rateLimiter: new RateLimiter({ ratePerSecond: 0, burst: 0 }) });
    for (let i = 0; i < 5; i++)
      expect((await app.handle(notificationRequest(paymentSucceeded(orderId())))).status).toBe(200);
  });
});

describe("client address behind proxies", () => {
  const forwardedFor = (app: ReturnType<PaymentsHarness["app"]>, xff: string, id = orderId()) =>
    app.handle(notificationRequest(paymentSucceeded(id), { headers: { "x-forwarded-for": xff } }));
  const randomIp = () =>
    `198.51.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}`;

  test("N2: random left-most X-Forwarded-For entries do not buy a fresh bucket each", async () => {
    const app = payments.app({ rateLimiter: frozenLimiter(2), trustProxy: 1 });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++)
      statuses.push((await forwardedFor(app, `${randomIp()}, 203.0.113.50`)).status);
    expect(statuses).toEqual([200, 200, 429, 429, 429]);
  });

  test("N2: a flood that names the provider's address spends its own bucket, not the provider's", async () => {
    const app = payments.app({ rateLimiter: frozenLimiter(2), trustProxy: 1 });
    const provider = "203.0.113.10";
    for (let i = 0; i < 5; i++) await forwardedFor(app, `${provider}, 198.51.100.66`);
    expect((await forwardedFor(app, provider)).status).toBe(200);
    expect((await forwardedFor(app, `${provider}, 198.51.100.66`)).status).toBe(429);
  });

  test("N2: the stored and logged source_ip is the address the trusted proxy saw, and only an IP address", async () => {
    const app = payments.app({ trustProxy: 2 });
    const stored = async (xff: string) => {
      const id = orderId();
      expect((await forwardedFor(app, xff, id)).status).toBe(200);
      const [row] = await payments.sql<{ source_ip: string }[]>`
        select source_ip from payments.notifications where order_id = ${id}`;
      return row.source_ip;
    };
    expect(await stored("192.0.2.1, 2001:db8::7, 10.0.0.2")).toBe("2001:db8::7");
    const forged = `forged-${"x".repeat(200)}`;
    // In-process requests have no socket, so the fallback shows as "unknown".
    expect(await stored(`203.0.113.9, ${forged}, 10.0.0.2`)).toBe("unknown");
    expect(await stored("10.0.0.2")).toBe("unknown");
    expect(await stored("fe80::1%eth0, 10.0.0.2")).toBe("unknown");
    expect(payments.logLines.join("")).not.toContain(forged);
  });
});

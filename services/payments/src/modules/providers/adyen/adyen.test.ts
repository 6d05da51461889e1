import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type PaymentsHarness, problemType, startPayments } from "@commerce/testing/in-process";
import { uniqueOrderId } from "@commerce/testing/payments-requests";
import {
  adyenBatch,
  adyenHmacKey,
  adyenItem,
  adyenRequest,
  basicAuth,
  otherAdyenHmacKey,
  providersEnv,
  signedItem,
} from "@commerce/testing/provider-requests";

let payments: PaymentsHarness;
beforeAll(async () => {
  payments = await startPayments({
    env: { ...providersEnv, ADYEN_HMAC_KEYS: `${otherAdyenHmacKey.slice(0, 32)},${adyenHmacKey}` },
  });
});
afterAll(() => payments.close());

const send = async (request: Request, app = payments.app()) => {
  const response = await app.handle(request);
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: response.status, headers: response.headers, text, json };
};

const idOf = (item: Record<string, unknown>) =>
  `adyen:${item.eventCode}:${item.pspReference}:${item.success}`;
const stored = (id: string) =>
  payments.sql<
    {
      provider: string;
      event: string;
      order_id: string | null;
      payment_ref: string;
      amount: string;
      currency: string;
    }[]
  >`select provider, event, order_id, payment_ref, amount, currency from payments.notifications where id = ${id}`;
const messages = (id: string) =>
  payments.sql<{ subject: string; payload: any }[]>`
    select subject, payload from payments.outbox where payload->>'notification_id' = ${id}`;

describe("Adyen: authentication", () => {
  test("Y1, Y3: a batch whose items Adyen's HmacValidator signed, with Basic credentials, is answered [accepted]", async () => {
    const item = adyenItem(uniqueOrderId());
    const answer = await send(adyenRequest(adyenBatch([signedItem(item)])));
    expect(answer.status).toBe(200);
    expect(answer.text).toBe("[accepted]");
    expect(await stored(idOf(item))).toHaveLength(1);
  });

  test("Y1: any key of ADYEN_HMAC_KEYS may match (rotation)", async () => {
    const item = adyenItem(uniqueOrderId());
    const rotated = await startPayments({
      env: { ...providersEnv, ADYEN_HMAC_KEYS: `${adyenHmacKey},${otherAdyenHmacKey}` },
    });
    try {
      const answer = await send(
        adyenRequest(adyenBatch([signedItem(item, otherAdyenHmacKey)])),
        rotated.app(),
      );
      expect(answer.status).toBe(200);
    } finally {
      await rotated.close();
    }
  });

  test("Y1, G3: forged, re-signed with another key, unsigned, tampered and half-forged batches are 401 problem+json and store nothing", async () => {
    const orderId = uniqueOrderId();
    const good = adyenItem(orderId);
    const bad = adyenItem(orderId, { eventCode: "REFUND" });
    const tampered = { ...signedItem(bad), amount: { currency: "EUR", value: 1 } };
    const forged = {
      ...bad,
      additionalData: { hmacSignature: Buffer.alloc(32, 7).toString("base64") },
    };
    for (const items of [
      [forged],
      [signedItem(bad, otherAdyenHmacKey)],
      [bad],
      [tampered],
      [signedItem(good), signedItem(bad, otherAdyenHmacKey)],
      [signedItem(good), forged],
    ]) {
      const answer = await send(adyenRequest(adyenBatch(items)));
      expect(answer.status).toBe(401);
      expect(answer.headers.get("content-type")).toBe(problemType);
    }
    for (const item of [good, bad]) {
      expect(await stored(idOf(item))).toHaveLength(0);
      expect(await messages(idOf(item))).toHaveLength(0);
    }
  });

  test("Y1: with ADYEN_WEBHOOK_USERNAME / _PASSWORD set, missing or wrong Basic credentials are 401 with a Basic challenge", async () => {
    const item = signedItem(adyenItem(uniqueOrderId()));
    for (const authorization of [
      null,
      basicAuth("adyen_webhook_user", "wrong"),
      basicAuth("someone", "a-long-webhook-password-42"),
      "Bearer x",
    ]) {
      const answer = await send(adyenRequest(adyenBatch([item]), { authorization }));
      expect(answer.status).toBe(401);
      expect(answer.headers.get("www-authenticate")).toBe('Basic realm="adyen"');
    }
    expect(await stored(idOf(item))).toHaveLength(0);
  });

  test("Y1: without Basic credentials configured, the HMAC alone authenticates", async () => {
    const noBasic = await startPayments({
      env: { ADYEN_HMAC_KEYS: adyenHmacKey, ADYEN_MERCHANT_ACCOUNTS: "ShopECOM" },
    });
    try {
      const item = adyenItem(uniqueOrderId());
      const answer = await send(
        adyenRequest(adyenBatch([signedItem(item)]), { authorization: null }),
        noBasic.app(),
      );
      expect(answer.status).toBe(200);
      expect(answer.text).toBe("[accepted]");
    } finally {
      await noBasic.close();
    }
  });
});

describe("Adyen: items as notifications", () => {
  test("Y2, M1: AUTHORISATION true is paid, false is failed, REFUND true is refunded about the originalReference; id adyen:<eventCode>:<pspReference>:<success>", async () => {
    const orderId = uniqueOrderId();
    const paid = adyenItem(orderId, { amount: { currency: "eur", value: 2500 } });
    const failed = adyenItem(orderId, { success: "false", reason: "Refused" });
    const refund = adyenItem(orderId, {
      eventCode: "REFUND",
      originalReference: paid.pspReference,
      amount: { currency: "EUR", value: 2500 },
    });
    const answer = await send(
      adyenRequest(adyenBatch([paid, failed, refund].map((item) => signedItem(item)))),
    );
    expect(answer.status).toBe(200);
    const expected = [
      [paid, "AUTHORISATION", payments.topology.payments.orderPaid, paid.pspReference],
      [failed, "AUTHORISATION", payments.topology.payments.orderFailed, failed.pspReference],
      [refund, "REFUND", payments.topology.payments.orderRefunded, paid.pspReference],
    ] as const;
    for (const [item, event, subject, ref] of expected) {
      const id = idOf(item);
      expect(id).toMatch(/^adyen:(AUTHORISATION|REFUND):\d+:(true|false)$/);
      expect([...(await stored(id))]).toEqual([
        expect.objectContaining({
          provider: "adyen",
          event,
          order_id: String(orderId),
          payment_ref: ref,
        }),
      ]);
      const [message] = await messages(id);
      expect(message.subject).toBe(subject);
      expect(message.payload).toMatchObject({
        notification_id: id,
        order_id: orderId,
        currency: "EUR",
        provider: "adyen",
        payment_ref: ref,
      });
    }
  });

  test("G2: other event codes (CAPTURE, REPORT_AVAILABLE, REFUND false) are stored and accepted without a message", async () => {
    const orderId = uniqueOrderId();
    const items = [
      adyenItem(orderId, { eventCode: "CAPTURE", originalReference: "8815000000000001" }),
      adyenItem(null, {
        eventCode: "REPORT_AVAILABLE",
        amount: { currency: "EUR", value: 0 },
        reason: "https://ca-test.adyen.com/reports/x.csv",
      }),
      adyenItem(orderId, { eventCode: "REFUND", success: "false" }),
    ];
    const answer = await send(adyenRequest(adyenBatch(items.map((item) => signedItem(item)))));
    expect(answer.text).toBe("[accepted]");
    for (const item of items) {
      expect(await stored(idOf(item))).toHaveLength(1);
      expect(await messages(idOf(item))).toHaveLength(0);
    }
  });

  test("G2: a merchantReference that is not a positive integer is stored with order_id null, accepted, and makes no message", async () => {
    const item = adyenItem("ORDER-2026-0042");
    expect((await send(adyenRequest(adyenBatch([signedItem(item)])))).text).toBe("[accepted]");
    const [row] = await stored(idOf(item));
    expect(row.order_id).toBeNull();
    expect(await messages(idOf(item))).toHaveLength(0);
  });

  test("Y3, G3: a batch repeated answers [accepted] and stores nothing new; a batch with one new item stores that one", async () => {
    const first = adyenItem(uniqueOrderId());
    const second = adyenItem(uniqueOrderId());
    const batch = adyenBatch([signedItem(first)]);
    expect((await send(adyenRequest(batch))).text).toBe("[accepted]");
    expect((await send(adyenRequest(batch))).text).toBe("[accepted]");
    expect(
      (await send(adyenRequest(adyenBatch([signedItem(first), signedItem(second)])))).text,
    ).toBe("[accepted]");
    expect(await messages(idOf(first))).toHaveLength(1);
    expect(await messages(idOf(second))).toHaveLength(1);
  });
});

describe("Adyen: bad input", () => {
  test("Y1: unparseable JSON, a body that is not a batch, and an amount that is not an integer are 400 problem+json and store nothing", async () => {
    const orderId = uniqueOrderId();
    const textAmount = adyenItem(orderId, { amount: { currency: "EUR", value: "1999" } });
    const fractional = adyenItem(orderId, { amount: { currency: "EUR", value: 19.99 } });
    const noSuccess = adyenItem(orderId, { success: "maybe" });
    const nul = adyenItem(orderId, { eventCode: "REFUND", originalReference: "88\u000015" });
    const cases: [string, string | undefined][] = [
      ['{"live": "false", "notificationItems": [', undefined],
      [JSON.stringify({ live: "false" }), "/notificationItems"],
      [JSON.stringify({ live: "false", notificationItems: [] }), "/notificationItems"],
      [
        JSON.stringify(adyenBatch([signedItem(textAmount)])),
        "/notificationItems/0/NotificationRequestItem/amount/value",
      ],
      [
        JSON.stringify(adyenBatch([signedItem(fractional)])),
        "/notificationItems/0/NotificationRequestItem/amount/value",
      ],
      [
        JSON.stringify(adyenBatch([signedItem(nul)])),
        "/notificationItems/0/NotificationRequestItem/originalReference",
      ],
      [
        JSON.stringify(adyenBatch([signedItem(noSuccess)])),
        "/notificationItems/0/NotificationRequestItem/success",
      ],
    ];
    for (const [body, path] of cases) {
      const answer = await send(adyenRequest(body));
      expect({ body: body.slice(0, 40), status: answer.status }).toEqual({
        body: body.slice(0, 40),
        status: 400,
      });
      expect(answer.headers.get("content-type")).toBe(problemType);
      if (path) expect(answer.json.errors.map((error: any) => error.path)).toContain(path);
    }
    for (const item of [textAmount, fractional, noSuccess, nul])
      expect(await stored(idOf(item))).toHaveLength(0);
  });
});

describe("Adyen: unconfigured", () => {
  test("G1: without ADYEN_HMAC_KEYS the service starts and the Adyen route answers 404", async () => {
    const plain = await startPayments();
    try {
      const item = adyenItem(uniqueOrderId());
      expect((await send(adyenRequest(adyenBatch([signedItem(item)])), plain.app())).status).toBe(
        404,
      );
    } finally {
      await plain.close();
    }
  });
});

import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { signPayload, verifySignature } from "./signature";

const secret = "whsec_test_secret_123";
const now = 1_700_000_000;
const body = new TextEncoder().encode('{"event":"payment.succeeded","order_id":42,"amount":1999}');

const independentHex = (key: string, t: number, payload: Uint8Array) =>
  createHmac("sha256", key)
    .update(Buffer.concat([Buffer.from(`${t}.`, "utf8"), Buffer.from(payload)]))
    .digest("hex");

const check = (header: string | null, payload = body, secrets = [secret]) =>
  verifySignature(header, payload, secrets, 300, now);

describe("signature scheme", () => {
  test("W2: signPayload matches an HMAC-SHA256 of '<t>.<body>' computed independently", () => {
    const header = signPayload(body, secret, now);
    expect(header).toBe(`t=${now},v1=${independentHex(secret, now, body)}`);
    expect(header).toMatch(/^t=1700000000,v1=[0-9a-f]{64}$/);
  });

  test("W2: a fixed vector (Stripe's scheme) verifies", () => {
    const payload = new TextEncoder().encode('{"id":"evt_1"}');
    const hex = createHmac("sha256", "whsec_abc").update('1600000000.{"id":"evt_1"}').digest("hex");
    expect(signPayload(payload, "whsec_abc", 1_600_000_000)).toBe(`t=1600000000,v1=${hex}`);
    expect(
      verifySignature(`t=1600000000,v1=${hex}`, payload, ["whsec_abc"], 300, 1_600_000_000),
    ).toEqual({ ok: true, timestamp: 1_600_000_000 });
  });

  test("W2: string and byte bodies sign the same", () => {
    expect(signPayload(new TextDecoder().decode(body), secret, now)).toBe(
      signPayload(body, secret, now),
    );
  });

  test("W2: a valid signature is accepted", () => {
    expect(check(signPayload(body, secret, now))).toEqual({ ok: true, timestamp: now });
  });

  test("W2: rotation — either of two configured secrets may match", () => {
    const secrets = ["whsec_new", "whsec_old"];
    expect(check(signPayload(body, "whsec_old", now), body, secrets).ok).toBe(true);
    expect(check(signPayload(body, "whsec_new", now), body, secrets).ok).toBe(true);
    expect(check(signPayload(body, "whsec_other", now), body, secrets)).toEqual({
      ok: false,
      reason: "mismatch",
    });
  });

  test("W2: with several v1 entries, one right one is enough", () => {
    const right = independentHex(secret, now, body);
    const wrong = independentHex("whsec_wrong", now, body);
    expect(check(`t=${now},v1=${wrong},v1=${right}`).ok).toBe(true);
    expect(check(`t=${now},v1=${right},v1=${wrong}`).ok).toBe(true);
    expect(check(`t=${now},v1=${wrong},v1=${wrong}`)).toEqual({ ok: false, reason: "mismatch" });
  });

  test("W2: spaces around items are tolerated and unknown schemes such as v0 ignored", () => {
    const hex = independentHex(secret, now, body);
    expect(check(` t=${now} , v0=abc , v1=${hex} `).ok).toBe(true);
  });

  test("W2: upper-case hex is rejected", () => {
    const hex = independentHex(secret, now, body).toUpperCase();
    expect(check(`t=${now},v1=${hex}`)).toEqual({ ok: false, reason: "malformed" });
  });

  test("W2: truncated or over-long hex is rejected", () => {
    const hex = independentHex(secret, now, body);
    expect(check(`t=${now},v1=${hex.slice(0, 63)}`)).toEqual({ ok: false, reason: "malformed" });
    expect(check(`t=${now},v1=${hex.slice(0, 32)}`)).toEqual({ ok: false, reason: "malformed" });
    expect(check(`t=${now},v1=${hex}0`)).toEqual({ ok: false, reason: "malformed" });
  });

  test("W2: a timestamp older than the tolerance is stale", () => {
    expect(check(signPayload(body, secret, now - 301))).toEqual({ ok: false, reason: "stale" });
    expect(check(signPayload(body, secret, now - 300)).ok).toBe(true);
  });

  test("W2: a timestamp further ahead than the tolerance is rejected as future", () => {
    expect(check(signPayload(body, secret, now + 301))).toEqual({ ok: false, reason: "future" });
    expect(check(signPayload(body, secret, now + 300)).ok).toBe(true);
  });

  test("W2: a tampered body does not verify", () => {
    const header = signPayload(body, secret, now);
    const tampered = new TextEncoder().encode(
      '{"event":"payment.succeeded","order_id":42,"amount":1}',
    );
    expect(check(header, tampered)).toEqual({ ok: false, reason: "mismatch" });
  });

  test("W2: the timestamp is part of what is signed", () => {
    const hex = independentHex(secret, now, body);
    expect(check(`t=${now + 1},v1=${hex}`)).toEqual({ ok: false, reason: "mismatch" });
  });

  test("W2: a missing header is rejected as missing", () => {
    expect(check(null)).toEqual({ ok: false, reason: "missing" });
    expect(check("")).toEqual({ ok: false, reason: "missing" });
    expect(check("   ")).toEqual({ ok: false, reason: "missing" });
  });

  test("W2: malformed headers are rejected as malformed", () => {
    const hex = independentHex(secret, now, body);
    for (const header of [
      hex,
      `v1=${hex}`,
      `t=${now}`,
      `t=${now},v0=${hex}`,
      `t=abc,v1=${hex}`,
      `t=-5,v1=${hex}`,
      `t=0${now},v1=${hex}`,
      `t=${now}.5,v1=${hex}`,
      `t=${now},t=${now},v1=${hex}`,
      `t=${now},v1=${hex},`,
      `t=${now},,v1=${hex}`,
      `t=${now};v1=${hex}`,
      `t=${now},v1=`,
      `t=${now},=x,v1=${hex}`,
      `T=${now},v1=${hex}`,
      `t=${now},v1=${hex},${"v0=a,".repeat(1000)}`,
    ])
      expect({ header, result: check(header) }).toEqual({
        header,
        result: { ok: false, reason: "malformed" },
      });
  });

  test("W2: an empty list of secrets verifies nothing", () => {
    expect(check(signPayload(body, secret, now), body, [])).toEqual({
      ok: false,
      reason: "mismatch",
    });
  });
});

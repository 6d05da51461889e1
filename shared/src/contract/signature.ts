import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * The webhook signature scheme (W2): byte for byte Stripe's `Stripe-Signature`, sent as
 * `X-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]`, where each `<hex>` is the lowercase hex
 * HMAC-SHA256 of `"<t>." + raw body bytes` under a shared secret. The payments service verifies
 * it and the provider simulator (scripts/webhook.ts) signs with it.
 */
export const signatureHeader = "x-signature";

export type SignatureRejection = "missing" | "malformed" | "stale" | "future" | "mismatch";

export type SignatureCheck =
  | { ok: true; timestamp: number }
  | { ok: false; reason: SignatureRejection };

const v1Pattern = /^[0-9a-f]{64}$/;
const timestampPattern = /^(0|[1-9][0-9]{0,11})$/;
const maxHeaderLength = 4096;

const hmac = (secret: string, timestamp: number, body: Uint8Array | string) =>
  createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest();

/** The header value a provider sends with `body` at `timestampSeconds`. */
export function signPayload(
  body: Uint8Array | string,
  secret: string,
  timestampSeconds: number,
): string {
  return `t=${timestampSeconds},v1=${hmac(secret, timestampSeconds, body).toString("hex")}`;
}

type ParsedHeader = { timestamp: number; signatures: Buffer[] };

/** Strict parse: `key=value` items, exactly one `t`, at least one well-formed `v1`. */
function parseHeader(header: string): ParsedHeader | undefined {
  if (header.length > maxHeaderLength) return undefined;
  let timestamp: number | undefined;
  const signatures: Buffer[] = [];
  for (const item of header.split(",")) {
    const separator = item.indexOf("=");
    if (separator <= 0) return undefined;
    const key = item.slice(0, separator).trim();
    const value = item.slice(separator + 1).trim();
    if (!/^[a-z0-9]+$/.test(key) || value === "") return undefined;
    if (key === "t") {
      if (timestamp !== undefined || !timestampPattern.test(value)) return undefined;
      timestamp = Number(value);
    } else if (key === "v1") {
      if (!v1Pattern.test(value)) return undefined;
      signatures.push(Buffer.from(value, "hex"));
    }
    // Other schemes (Stripe's test-mode v0, future versions) are ignored, as Stripe does.
  }
  if (timestamp === undefined || signatures.length === 0) return undefined;
  return { timestamp, signatures };
}

/**
 * Checks an `X-Signature` header against the raw body: any listed `v1` under any of `secrets`
 * (rotation) may match, compared in constant time; a timestamp more than `toleranceSeconds` away
 * from `nowSeconds`, in either direction, is rejected before any HMAC is computed.
 */
export function verifySignature(
  header: string | null | undefined,
  body: Uint8Array,
  secrets: string[],
  toleranceSeconds: number,
  nowSeconds: number,
): SignatureCheck {
  if (header === null || header === undefined || header.trim() === "")
    return { ok: false, reason: "missing" };
  const parsed = parseHeader(header);
  if (!parsed) return { ok: false, reason: "malformed" };
  const { timestamp, signatures } = parsed;
  if (nowSeconds - timestamp > toleranceSeconds) return { ok: false, reason: "stale" };
  if (timestamp - nowSeconds > toleranceSeconds) return { ok: false, reason: "future" };
  let matched = false;
  for (const secret of secrets) {
    const expected = hmac(secret, timestamp, body);
    // Every candidate is compared, so the time taken does not tell which one matched.
    for (const signature of signatures) matched = timingSafeEqual(expected, signature) || matched;
  }
  return matched ? { ok: true, timestamp } : { ok: false, reason: "mismatch" };
}

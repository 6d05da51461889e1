/**
 * Plays the payment provider: signs a notification and sends it to the payments service,
 * retrying failures with back-off, one delivery-log line per attempt:
 *   npm run webhook -- --order 42 --amount 1999 [--currency USD] [--event payment.succeeded]
 *                      [--id evt_1] [--repeat N] [--url URL] [--attempts 8]
 *                      [--provider generic|stripe|adyen] [--payment-ref pi_...] [--success false]
 * Signs with the first of PAYMENT_WEBHOOK_SECRETS (or the secret `npm start` keeps in .data/).
 * `--event payment.refunded` refunds a paid order, `--event payment.failed` records a failed
 * attempt; other events are stored only. Every repeat sends the same body, so repeats after the
 * first are duplicates (W5).
 *
 * `--provider stripe` sends a Stripe event (default payment_intent.succeeded; also
 * checkout.session.completed, charge.refunded, payment_intent.payment_failed, ...) signed with
 * STRIPE_WEBHOOK_SECRETS; `--provider adyen` an Adyen batch of one item (default AUTHORISATION;
 * REFUND with --payment-ref the payment's pspReference) signed with ADYEN_HMAC_KEYS, with Basic
 * credentials when ADYEN_WEBHOOK_USERNAME / _PASSWORD are set, of the first of
 * ADYEN_MERCHANT_ACCOUNTS. Both follow PAYMENT_MODE (livemode, live; G4). Disputes (L5):
 * `--event charge.dispute.created` / `charge.dispute.closed` (won; lost with --success false)
 * with --payment-ref the PaymentIntent; Adyen `--event NOTIFICATION_OF_CHARGEBACK`, CHARGEBACK,
 * CHARGEBACK_REVERSED, SECOND_CHARGEBACK or CANCEL_OR_REFUND with --payment-ref the payment's
 * pspReference. See scripts/provider-deliveries.ts.
 */
import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { signatureHeader, signPayload } from "@commerce/shared/contract/signature";
import { notificationIdOf } from "../services/payments/src/modules/providers/generic";
import { adyenDelivery, type Delivery, stripeDelivery } from "./provider-deliveries";

const fail = (message: string): never => {
  console.error(message);
  process.exit(1);
};

const args = process.argv.slice(2);
// `bun scripts/webhook.ts -- --order 1` passes the `--` on; npm strips it.
if (args[0] === "--") args.shift();

function readArgs() {
  try {
    return parseArgs({
      args,
      options: {
        order: { type: "string" },
        amount: { type: "string" },
        currency: { type: "string", default: "USD" },
        event: { type: "string" },
        provider: { type: "string", default: "generic" },
        "payment-ref": { type: "string" },
        success: { type: "string", default: "true" },
        id: { type: "string" },
        repeat: { type: "string", default: "1" },
        attempts: { type: "string", default: "8" },
        url: { type: "string" },
      },
    }).values;
  } catch (error) {
    return fail(`${(error as Error).message}\nusage: npm run webhook -- --order 42 --amount 1999`);
  }
}
const values = readArgs();

const integer = (name: string, raw: string | undefined, min: number): number => {
  if (raw === undefined) return fail(`--${name} is required`);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)) || Number(raw) < min)
    return fail(`--${name} must be an integer of at least ${min}, got "${raw}"`);
  return Number(raw);
};

const orderId = integer("order", values.order, 1);
const amount = integer("amount", values.amount, 0);
const repeat = integer("repeat", values.repeat, 1);
const maxAttempts = integer("attempts", values.attempts, 1);
const { currency, provider } = values;
if (values.success !== "true" && values.success !== "false")
  fail(`--success must be true or false, got "${values.success}"`);

/** The seed's own format, signed with X-Signature (W2). */
function genericDelivery(): Delivery {
  const localSecret = ".data/payment-webhook-secret";
  const secret =
    process.env.PAYMENT_WEBHOOK_SECRETS?.split(",")[0]?.trim() ||
    (existsSync(localSecret) ? readFileSync(localSecret, "utf8").trim() : "") ||
    fail("PAYMENT_WEBHOOK_SECRETS is not set (and no .data/payment-webhook-secret from npm start)");
  const notification = {
    event: values.event ?? "payment.succeeded",
    order_id: orderId,
    amount,
    currency,
    ...(values.id === undefined ? {} : { id: values.id }),
  };
  const body = JSON.stringify(notification);
  return {
    path: "/api/webhooks/payment",
    body,
    notificationId: notificationIdOf(notification),
    headers: async () => ({
      "content-type": "application/json",
      [signatureHeader]: signPayload(body, secret, Math.floor(Date.now() / 1000)),
    }),
  };
}

const input = {
  orderId,
  amount,
  currency,
  event: values.event,
  id: values.id,
  paymentRef: values["payment-ref"],
  success: values.success === "true",
};
const deliveries: Record<string, () => Delivery> = {
  generic: genericDelivery,
  stripe: () => stripeDelivery(input),
  adyen: () => adyenDelivery(input),
};
if (!Object.hasOwn(deliveries, provider))
  fail(`--provider must be generic, stripe or adyen, got "${provider}"`);
const { path, body, notificationId, headers } = deliveries[provider]();
// PAYMENTS_URL is the generic webhook's URL; the other providers' routes are beside it.
const genericUrl = process.env.PAYMENTS_URL ?? "http://127.0.0.1:3001/api/webhooks/payment";
const url = values.url ?? new URL(path, genericUrl).toString();

type Attempt = { ok: boolean; outcome: string; retryAfterMs?: number };

/** One signed POST, with a fresh timestamp, as a provider sends each attempt. */
async function attempt(): Promise<Attempt> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: await headers(),
      body,
      signal: AbortSignal.timeout(10_000),
    });
    const text = (await response.text()).replaceAll(/\s+/g, " ").slice(0, 200);
    const retryAfter = Number(response.headers.get("retry-after"));
    return {
      ok: response.ok,
      outcome: `status=${response.status} response=${text}`,
      retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined,
    };
  } catch (error) {
    return { ok: false, outcome: `error="${(error as Error).message}"` };
  }
}

/** Sends until a 2xx or `maxAttempts`, waiting 0.5 s, 1 s, 2 s, ... (or Retry-After) between. */
async function deliver(delivery: number): Promise<boolean> {
  let backoffMs = 500;
  for (let n = 1; n <= maxAttempts; n++) {
    const startedAt = performance.now();
    const result = await attempt();
    const latency = Math.round(performance.now() - startedAt);
    console.log(
      `${new Date().toISOString()} notification=${notificationId} delivery=${delivery}/${repeat} ` +
        `attempt=${n}/${maxAttempts} ${result.outcome} latency_ms=${latency}`,
    );
    if (result.ok) return true;
    if (n < maxAttempts) await Bun.sleep(Math.max(backoffMs, result.retryAfterMs ?? 0));
    backoffMs *= 2;
  }
  return false;
}

let delivered = 0;
for (let delivery = 1; delivery <= repeat; delivery++) if (await deliver(delivery)) delivered++;
if (delivered < repeat) fail(`${repeat - delivered} of ${repeat} deliveries failed`);

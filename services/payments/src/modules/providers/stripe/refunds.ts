import { ConfigError, Var } from "@commerce/shared/platform/env";
import Stripe from "stripe";
import {
  outcomeUnknown,
  type PaymentMode,
  type RefundAnswer,
  type RefundClient,
  refundIdempotencyKey,
} from "../provider";

export type StripeApiSettings = { apiKey: string; url: string };

/** The variables of Stripe's API (F2), part of the payments service's schema. */
export const stripeApiVariables = {
  STRIPE_API_KEY: Var.optional(
    Var.text({
      pattern: "^(sk|rk)_(test|live)_[A-Za-z0-9_]+$",
      secret: true,
      expected: "a secret or restricted key: sk_test_..., sk_live_..., rk_test_... or rk_live_...",
      description:
        "F2: Stripe's API key (a restricted key with Refunds write); its mode must be PAYMENT_MODE's. Unset, Stripe refunds are not made",
    }),
  ),
  STRIPE_API_URL: Var.url(["https:", "http:"], {
    default: "https://api.stripe.com",
    description:
      "F2, F7: where Stripe's API is; the key is sent nowhere else (tests: a local server)",
  }),
};

/** F2: Stripe's API settings, undefined without a key; a key of the other mode is a ConfigError. */
export function stripeApiSettings(
  vars: { STRIPE_API_KEY?: string; STRIPE_API_URL: string },
  mode: PaymentMode,
): StripeApiSettings | undefined {
  const apiKey = vars.STRIPE_API_KEY;
  if (apiKey === undefined) return undefined;
  if (!apiKey.includes(`_${mode}_`))
    throw new ConfigError(
      `STRIPE_API_KEY is a ${mode === "live" ? "test" : "live"} key; PAYMENT_MODE is ${mode}`,
    );
  return { apiKey, url: vars.STRIPE_API_URL };
}

/** Stripe's own refund reasons; the shop's `other` is told as none. */
const stripeReasons = new Set(["duplicate", "fraudulent", "requested_by_customer"]);

function answerOf(refund: Stripe.Refund, requestId?: string): RefundAnswer {
  if (refund.status === "succeeded")
    return { outcome: "succeeded", providerRefundId: refund.id, requestId };
  if (refund.status === "failed" || refund.status === "canceled")
    return {
      outcome: "failed",
      providerRefundId: refund.id,
      reason: `Stripe: the refund ${refund.status}${refund.failure_reason ? ` (${refund.failure_reason})` : ""}`,
      requestId,
    };
  return { outcome: "pending", providerRefundId: refund.id, requestId };
}

/** F3: a Stripe error as an answer: a definite refusal, or nothing definite. */
function failureOf(error: unknown): RefundAnswer {
  if (!(error instanceof Stripe.errors.StripeError))
    return { outcome: "unknown", reason: error instanceof Error ? error.message : String(error) };
  const requestId = error.requestId;
  // A key reused with other parameters says nothing of whether the first request made a refund.
  if (outcomeUnknown(error.statusCode) || error.type === "StripeIdempotencyError")
    return {
      outcome: "unknown",
      reason: `Stripe: ${error.statusCode ?? error.type}: ${error.message}`,
      requestId,
    };
  return {
    outcome: "failed",
    reason: `Stripe: ${error.message}${error.code ? ` (${error.code})` : ""}`,
    requestId,
  };
}

/**
 * F7: Stripe's library pointed at STRIPE_API_URL (host, port, protocol), the key sent nowhere
 * else, each call bounded by `timeoutMs`, with no retries of its own (the callers retry).
 */
export function stripeClient(settings: StripeApiSettings, timeoutMs: number): Stripe {
  const url = new URL(settings.url);
  return new Stripe(settings.apiKey, {
    host: url.hostname,
    port: url.port || (url.protocol === "https:" ? 443 : 80),
    protocol: url.protocol === "http:" ? "http" : "https",
    timeout: timeoutMs,
    maxNetworkRetries: 0,
    telemetry: false,
  });
}

/**
 * F2: refunds through Stripe's API with Stripe's library, pointed at STRIPE_API_URL (host, port,
 * protocol), with no retries of its own (the worker retries with the same key, F3) and a timeout
 * per call (F7). The refund names the PaymentIntent and carries the order and refund ids.
 */
export function stripeRefunds(settings: StripeApiSettings, timeoutMs: number): RefundClient {
  const client = stripeClient(settings, timeoutMs);
  return {
    provider: "stripe",
    async refund(ask) {
      try {
        const refund = await client.refunds.create(
          {
            payment_intent: ask.paymentRef,
            amount: ask.amount,
            ...(ask.reason && stripeReasons.has(ask.reason)
              ? { reason: ask.reason as Stripe.RefundCreateParams.Reason }
              : {}),
            metadata: { order_id: String(ask.orderId), refund_id: String(ask.refundId) },
          },
          { idempotencyKey: refundIdempotencyKey(ask.refundId) },
        );
        return answerOf(refund, refund.lastResponse?.requestId);
      } catch (error) {
        return failureOf(error);
      }
    },
    async check(providerRefundId) {
      try {
        const refund = await client.refunds.retrieve(providerRefundId);
        return answerOf(refund, refund.lastResponse?.requestId);
      } catch (error) {
        const answer = failureOf(error);
        // A refund Stripe cannot show now is no refusal of it.
        return answer.outcome === "failed" ? { ...answer, outcome: "unknown" } : answer;
      }
    },
  };
}

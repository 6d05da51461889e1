import { CheckoutAPI, Client, EnvironmentEnum, HttpClientException } from "@adyen/api-library";
import { ConfigError, Var } from "@commerce/shared/platform/env";
import {
  outcomeUnknown,
  type PaymentMode,
  type RefundAnswer,
  type RefundClient,
  refundIdempotencyKey,
} from "../provider";

export type AdyenApiSettings = { apiKey: string; checkoutUrl: string; merchantAccount: string };

/** The variables of Adyen's Checkout API (F2), part of the payments service's schema. */
export const adyenApiVariables = {
  ADYEN_API_KEY: Var.optional(
    Var.text({
      minLength: 16,
      secret: true,
      description:
        "F2: Adyen's API key (an API credential with the Checkout webservice role); needs ADYEN_HMAC_KEYS, for the REFUND notifications. Unset, Adyen refunds are not made",
    }),
  ),
  ADYEN_CHECKOUT_URL: Var.url(["https:", "http:"], {
    default: "https://checkout-test.adyen.com/v71",
    description:
      "F2, F7: the Checkout API's base, version included (live: https://<prefix>-checkout-live.adyenpayments.com/checkout/v71); the key is sent nowhere else",
  }),
};

/**
 * F2: Adyen's API settings, undefined without a key. A refund's outcome is Adyen's `REFUND`
 * notification, so its webhook (ADYEN_HMAC_KEYS) must be on; the merchant account is the first of
 * ADYEN_MERCHANT_ACCOUNTS. A test endpoint for live money, or the reverse, is a ConfigError.
 */
export function adyenApiSettings(
  vars: { ADYEN_API_KEY?: string; ADYEN_CHECKOUT_URL: string },
  merchantAccounts: string[] | undefined,
  mode: PaymentMode,
): AdyenApiSettings | undefined {
  const apiKey = vars.ADYEN_API_KEY;
  if (apiKey === undefined) return undefined;
  if (!merchantAccounts?.length)
    throw new ConfigError(
      "ADYEN_HMAC_KEYS and ADYEN_MERCHANT_ACCOUNTS are required with ADYEN_API_KEY (a refund's outcome is Adyen's REFUND notification)",
    );
  const url = vars.ADYEN_CHECKOUT_URL;
  if (mode === "live" && /checkout-test\.adyen\.com/.test(url))
    throw new ConfigError("ADYEN_CHECKOUT_URL is Adyen's test endpoint; PAYMENT_MODE is live");
  return { apiKey, checkoutUrl: url.replace(/\/+$/, ""), merchantAccount: merchantAccounts[0] };
}

/** Where Adyen's library addresses the Checkout API (its own base, test or live, any version). */
const libraryBase = /^https:\/\/[^/]*checkout[^/]*\.adyen(?:payments)?\.com(?:\/checkout)?\/v\d+/;

/**
 * The HTTP client Adyen's library calls (its ClientInterface): the library builds the request
 * (path, body, idempotency key); this sends it to ADYEN_CHECKOUT_URL instead of Adyen's own base,
 * over http or https, with a timeout (F7), the API key to that URL only.
 */
function checkoutHttp(settings: AdyenApiSettings, timeoutMs: number) {
  return {
    async request(
      endpoint: string,
      json: string | Buffer,
      _config: unknown,
      _isApiKeyRequired: boolean,
      options: { idempotencyKey?: string; method?: string } = {},
    ): Promise<string> {
      const url = endpoint.replace(libraryBase, settings.checkoutUrl);
      if (!url.startsWith(`${settings.checkoutUrl}/`))
        throw new Error(`Adyen: refusing to send the API key to ${new URL(url).origin}`);
      const headers: Record<string, string> = {
        "content-type": "application/json; charset=utf-8",
        "x-api-key": settings.apiKey,
      };
      if (options.idempotencyKey) headers["idempotency-key"] = options.idempotencyKey;
      const response = await fetch(url, {
        method: options.method ?? "POST",
        headers,
        body: json.toString(),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await response.text();
      if (!response.ok) {
        let message = `HTTP ${response.status}`;
        let errorCode: string | undefined;
        try {
          const body = JSON.parse(text) as { message?: string; errorCode?: string };
          message = body.message ?? message;
          errorCode = body.errorCode;
        } catch {}
        throw new HttpClientException({
          message,
          statusCode: response.status,
          errorCode,
          responseBody: text,
          responseHeaders: { pspreference: response.headers.get("pspreference") ?? undefined },
        });
      }
      return text;
    },
  };
}

/**
 * F2: refunds through Adyen's Checkout API with Adyen's library (`refundCapturedPayment`), the
 * merchant account and `reference` the order id (so the `REFUND` notification names the order,
 * Y2). Adyen answers only `received`: the refund is `pending` until its notification.
 */
export function adyenRefunds(settings: AdyenApiSettings, timeoutMs: number): RefundClient {
  const client = new Client({ apiKey: settings.apiKey, environment: EnvironmentEnum.TEST });
  client.httpClient = checkoutHttp(settings, timeoutMs) as never;
  const checkout = new CheckoutAPI(client);
  return {
    provider: "adyen",
    async refund(ask) {
      try {
        const answer = await checkout.ModificationsApi.refundCapturedPayment(
          ask.paymentRef,
          {
            merchantAccount: settings.merchantAccount,
            amount: { value: ask.amount, currency: ask.currency },
            reference: String(ask.orderId),
          },
          { idempotencyKey: refundIdempotencyKey(ask.refundId) },
        );
        return {
          outcome: "pending",
          providerRefundId: answer.pspReference,
          requestId: answer.pspReference,
        };
      } catch (error) {
        return failureOf(error);
      }
    },
  };
}

/** F3: an Adyen error as an answer: a definite refusal, or nothing definite. */
function failureOf(error: unknown): RefundAnswer {
  if (!(error instanceof HttpClientException))
    return {
      outcome: "unknown",
      reason: `Adyen: ${error instanceof Error ? error.message : String(error)}`,
    };
  const requestId = (error.responseHeaders?.pspreference as string | undefined) || undefined;
  const code = error.errorCode ? ` (${error.errorCode})` : "";
  if (outcomeUnknown(error.statusCode))
    return {
      outcome: "unknown",
      reason: `Adyen: ${error.statusCode}: ${error.message}${code}`,
      requestId,
    };
  return { outcome: "failed", reason: `Adyen: ${error.message}${code}`, requestId };
}

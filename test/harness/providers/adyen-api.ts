import { adyenBatch, basicAuth, signedItem } from "../provider-requests";
import { headerOf, ProviderServer } from "./provider-server";

export const adyenApiKey = "AQE-local-adyen-api-key-0123456789abcdef";
export const adyenMerchantAccount = "ShopECOM";

type Payment = {
  pspReference: string;
  merchantReference: string;
  value: number;
  currency: string;
};

type Refund = {
  pspReference: string;
  paymentPspReference: string;
  reference: string;
  value: number;
  currency: string;
  /** What the REFUND notification says: `true`, or `false` with a reason. */
  success: boolean;
  reason: string;
  notified: boolean;
};

const pspReference = () => String(Math.floor(Math.random() * 9e15) + 1e15);

const adyenError = (status: number, errorCode: string, message: string, errorType: string) => ({
  status,
  body: { status, errorCode, message, errorType, pspReference: pspReference() },
  headers: { pspReference: pspReference() },
});

/**
 * A local server that answers as Adyen's Checkout API does for a refund (F2, B5):
 * `POST /v<n>/payments/{pspReference}/refunds` with `X-API-Key`, answered 201 `received` with the
 * refund's own pspReference; the outcome follows as a signed `REFUND` notification (HMAC by
 * Adyen's own library, Basic credentials) to `webhookUrl`: `success` "true", or "false" when the
 * refund would take more than the payment has left. Idempotency keys are kept as Adyen keeps them
 * (the first answer replayed); faults for the next refund requests (`fail`). The shop reaches it
 * through ADYEN_CHECKOUT_URL (`checkoutUrl`).
 */
export async function startAdyenApi({
  apiKey = adyenApiKey,
  notifyAfterMs = 50,
  notifyForMs = 4_000,
}: {
  apiKey?: string;
  notifyAfterMs?: number;
  /** How long a REFUND notification is sent again while the webhook does not answer 2xx. */
  notifyForMs?: number;
} = {}) {
  const payments = new Map<string, Payment>();
  const refunds = new Map<string, Refund>();
  const state: { webhookUrl?: string; notify: boolean } = { notify: true };

  const refundedOf = (psp: string) =>
    [...refunds.values()]
      .filter((r) => r.paymentPspReference === psp && r.success)
      .reduce((sum, r) => sum + r.value, 0);

  async function notify(refund: Refund) {
    if (!state.webhookUrl || !state.notify) return;
    const item = signedItem({
      additionalData: {},
      amount: { currency: refund.currency, value: refund.value },
      eventCode: "REFUND",
      eventDate: new Date().toISOString().replace(/\.\d+Z$/, "+00:00"),
      merchantAccountCode: adyenMerchantAccount,
      merchantReference: refund.reference,
      originalReference: refund.paymentPspReference,
      pspReference: refund.pspReference,
      reason: refund.reason,
      success: String(refund.success),
    });
    const deadline = Date.now() + notifyForMs;
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      const response = await fetch(state.webhookUrl, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: basicAuth() },
        body: JSON.stringify(adyenBatch([item])),
        signal: AbortSignal.timeout(10_000),
      }).catch(() => undefined);
      if (response?.ok) {
        refund.notified = true;
        return;
      }
      await Bun.sleep(attempt < 20 ? 200 : 2_000);
    }
  }

  const server = new ProviderServer(
    ({ method, path, body, headers }) => {
      if (headerOf(headers, "x-api-key") !== apiKey)
        return adyenError(401, "000", "HTTP Status Response - Unauthorized", "security");
      const match = /^\/v\d+\/payments\/([^/]+)\/refunds$/.exec(path);
      if (method !== "POST" || !match) return undefined;
      let request: {
        merchantAccount?: string;
        amount?: { value?: number; currency?: string };
        reference?: string;
      };
      try {
        request = JSON.parse(body);
      } catch {
        return adyenError(400, "702", "Structure is not valid JSON", "validation");
      }
      if (request.merchantAccount !== adyenMerchantAccount)
        return adyenError(403, "901", "Invalid Merchant Account", "security");
      const payment = payments.get(decodeURIComponent(match[1]));
      if (!payment)
        return adyenError(
          422,
          "167",
          "Original pspReference required for this operation",
          "validation",
        );
      const value = request.amount?.value;
      if (!Number.isSafeInteger(value) || (value as number) <= 0)
        return adyenError(422, "137", "Invalid amount specified", "validation");
      if (request.amount?.currency !== payment.currency)
        return adyenError(422, "128", "Currency mismatch", "validation");
      const fits = (value as number) <= payment.value - refundedOf(payment.pspReference);
      const refund: Refund = {
        pspReference: pspReference(),
        paymentPspReference: payment.pspReference,
        reference: request.reference ?? "",
        value: value as number,
        currency: payment.currency,
        success: fits,
        reason: fits ? "" : "Insufficient balance on payment",
        notified: false,
      };
      refunds.set(refund.pspReference, refund);
      setTimeout(() => void notify(refund), notifyAfterMs);
      return {
        status: 201,
        body: {
          merchantAccount: adyenMerchantAccount,
          paymentPspReference: payment.pspReference,
          pspReference: refund.pspReference,
          reference: refund.reference,
          status: "received",
          amount: { value: refund.value, currency: refund.currency },
        },
        headers: { pspReference: refund.pspReference },
      };
    },
    {
      credentialOf: (headers) => headerOf(headers, "x-api-key"),
      keyMisuse: () =>
        adyenError(422, "704", "request already processed or in progress", "validation"),
      moves: (path) => /\/refunds$/.test(path),
    },
  );
  await server.start();

  return {
    server,
    /** ADYEN_CHECKOUT_URL: the Checkout API's base, version included. */
    checkoutUrl: `${server.url}/v71`,
    apiKey,
    /** Where the REFUND notifications go (the payments service's Adyen route), once known. */
    set webhookUrl(url: string) {
      state.webhookUrl = url;
    },
    /** Off: Adyen makes refunds but its notifications never arrive (a webhook endpoint down). */
    set notifications(on: boolean) {
      state.notify = on;
    },
    /** A captured payment for `value` minor units, its merchantReference the order. */
    payment(value: number, currency: string, orderId: number, psp = pspReference()): Payment {
      const payment = {
        pspReference: psp,
        merchantReference: String(orderId),
        value,
        currency,
      };
      payments.set(payment.pspReference, payment);
      return payment;
    },
    /** A refund made in Adyen's Customer Area, not by the shop (no notification is sent). */
    refundElsewhere(paymentPsp: string, value: number) {
      const payment = payments.get(paymentPsp);
      if (!payment) throw new Error(`no payment ${paymentPsp}`);
      const refund: Refund = {
        pspReference: pspReference(),
        paymentPspReference: paymentPsp,
        reference: payment.merchantReference,
        value,
        currency: payment.currency,
        success: true,
        reason: "",
        notified: true,
      };
      refunds.set(refund.pspReference, refund);
      return refund;
    },
    /** Every payment Adyen holds: its pspReference and value. */
    payments: () => [...payments.values()].map((p) => [p.pspReference, p.value] as const),
    /** Every payment Adyen holds, as made. */
    paymentList: () => [...payments.values()],
    refunds: (paymentPsp?: string) =>
      [...refunds.values()].filter((r) => !paymentPsp || r.paymentPspReference === paymentPsp),
    fail: server.fail.bind(server),
    refundRequests: () => server.moves(),
    stop: () => server.stop(),
  };
}

export type AdyenApi = Awaited<ReturnType<typeof startAdyenApi>>;

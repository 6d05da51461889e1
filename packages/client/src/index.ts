import type { PaymentNotification, Received } from "@commerce/payments/notification";
import { signatureHeader, signPayload } from "@commerce/shared/contract/signature";
import type { Problem } from "@commerce/shared/platform/errors";

export { type ApiClient, apiClient, type PaymentsClient, paymentsClient } from "./browser";

export type { PaymentNotification };

/**
 * Signs a payment notification as the provider does (HMAC-SHA256 of `<t>.<raw body>` in
 * X-Signature) and sends it to the payments webhook; the answer with its status.
 */
export async function sendPaymentNotification(
  baseUrl: string,
  notification: PaymentNotification,
  { secret, at = Math.floor(Date.now() / 1000) }: { secret: string; at?: number },
): Promise<{ status: 200; body: Received } | { status: number; body: Problem }> {
  const raw = JSON.stringify(notification);
  const response = await fetch(new URL("/api/webhooks/payment", baseUrl), {
    method: "POST",
    headers: {
      "content-type": "application/json",
      [signatureHeader]: signPayload(raw, secret, at),
    },
    body: raw,
  });
  const body = await response.json();
  return response.status === 200
    ? { status: 200, body: body as Received }
    : { status: response.status, body: body as Problem };
}

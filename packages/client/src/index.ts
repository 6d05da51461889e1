import type { App } from "@commerce/api/app";
import type { PaymentNotification, Received } from "@commerce/payments/notification";
import type { Problem } from "@commerce/shared/errors";
import { signatureHeader, signPayload } from "@commerce/shared/signature";
import { treaty } from "@elysiajs/eden";

/**
 * The api as Eden Treaty sees it: paths, bodies, answers and errors typed from the app's own
 * route schemas, so a route change that breaks a caller fails the type check.
 * `apiClient(url, token).api.orders.post({ product_id: 1, qty: 2 })`.
 */
export const apiClient = (baseUrl: string, token?: string) =>
  treaty<App>(baseUrl, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });

export type ApiClient = ReturnType<typeof apiClient>;

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

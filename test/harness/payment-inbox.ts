import type { PaymentMessage } from "@commerce/shared/contract/messages";
import { applyPaymentMessage } from "../../services/api/src/modules/payment-inbox/apply";
import type { ApiHarness } from "./in-process";

/**
 * What the payment-inbox tests ask of an in-process api: a new order (one unit of a product of its
 * own), a payment message applied as `succeeded` the way the consumer applies it, and the order's
 * status, timeline and payment reviews (oldest first).
 */
export function paymentInboxKit(api: ApiHarness) {
  return {
    async newOrder(price = 1999) {
      const product = await api.product({ price });
      const { token } = await api.customer();
      const res = await api.call("POST", "/api/orders", {
        token,
        body: { product_id: product.id, qty: 1 },
      });
      return res.json as { order_id: number; amount: number; currency: string };
    },
    succeeded: (message: PaymentMessage) =>
      applyPaymentMessage(api.db, api.deps.topology, "succeeded", message),
    status: async (id: number) =>
      (await api.sql<{ status: string }[]>`select status from api.orders where id = ${id}`)[0]
        .status,
    timeline: (id: number) =>
      api.sql<{ type: string; notification_id: string | null; detail: Record<string, unknown> }[]>`
        select type, notification_id, detail from api.order_events where order_id = ${id}
        order by id`,
    reviews: async (id: number) => [
      ...(await api.sql<{ reason: string; event: string }[]>`
        select reason, event from api.payment_reviews where order_id = ${id} order by id`),
    ],
  };
}

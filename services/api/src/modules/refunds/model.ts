import { named } from "@commerce/shared/platform/openapi";
import { t } from "elysia";
import { refundReasons, refundStatuses } from "../../db/schema";
import { bodyInt, choice, integer, text } from "../../lib/fields";

const timestamp = (description: string) =>
  t.Nullable(t.String({ format: "date-time", description }));

/** F1: what an admin asks: how much (default: all that is left), why, and the provider's reason. */
export const refundRequest = t.Object(
  {
    amount: t.Optional(
      bodyInt(
        1,
        Number.MAX_SAFE_INTEGER,
        "Minor units of the order's currency; default: all that is left to refund",
      ),
    ),
    note: text(1, 1000, "Why, for whoever reads the order later; may span lines", {
      multiline: true,
      name: "note",
    }),
    reason: t.Optional(
      choice([...refundReasons], { description: "The reason the provider is told" }),
    ),
  },
  {
    additionalProperties: false,
    examples: [{ amount: 500, note: "One mug arrived broken; ticket 5120", reason: "other" }],
  },
);

/** F1: a refund the shop asked for, as the api answers it. */
export const refund = t.Object({
  refund_id: integer(),
  order_id: integer(),
  amount: integer({ description: "Minor units of currency" }),
  currency: t.String(),
  status: choice([...refundStatuses], {
    description:
      "requested: recorded, not yet taken by the provider; pending: the provider took it (Adyen's received, Stripe's pending); succeeded or failed: the provider's word",
  }),
  provider: t.String({ description: "The payment's provider: stripe or adyen" }),
  payment_ref: t.String({ description: "The provider's id of the payment it returns" }),
  provider_refund_id: t.Nullable(
    t.String({ description: "The provider's id of the refund (re_..., a pspReference)" }),
  ),
  reason: t.Nullable(choice([...refundReasons])),
  failure_reason: t.Nullable(t.String({ description: "The provider's words for a refusal" })),
  requested_at: t.String({ format: "date-time" }),
  settled_at: timestamp("When it succeeded or failed"),
  actor: t.String({ description: "The admin's token sub" }),
});

export const refundRequested = t.Object({
  refund_id: integer(),
  order_id: integer(),
  amount: integer(),
  currency: t.String(),
  status: t.Literal("requested"),
  requested_at: t.String({ format: "date-time" }),
});

export const refundList = t.Object({
  items: t.Array(refund),
  refunds_through: t.Nullable(
    t.Array(t.String(), {
      description:
        "The providers the payments service refunds through (those it has an API key for); a payment of another provider is refunded elsewhere and recorded with a PATCH. null when payments has not said (it is away)",
    }),
  ),
});

export type Refund = typeof refund.static;
export type RefundRequest = typeof refundRequest.static;

const refundExample = {
  refund_id: 31,
  order_id: 1021,
  amount: 500,
  currency: "USD",
  status: "succeeded",
  provider: "stripe",
  payment_ref: "pi_3PkR2xLkdIwHu7ix1Zz9y8x7",
  provider_refund_id: "re_3PkR2xLkdIwHu7ix0x1y2z3a",
  reason: "other",
  failure_reason: null,
  requested_at: "2026-11-23T15:10:02.481Z",
  settled_at: "2026-11-23T15:10:03.112Z",
  actor: "ops-alice",
};

// D5: the document's named components.
named("RefundRequest", refundRequest, {
  description: "A refund through the payment's provider",
});
named("Refund", refund, {
  description: "A refund the shop asked for, and where it stands",
  examples: [refundExample],
});
named("RefundRequested", refundRequested, {
  description: "A refund recorded; the payments service asks the provider for it",
  examples: [
    {
      refund_id: 31,
      order_id: 1021,
      amount: 500,
      currency: "USD",
      status: "requested",
      requested_at: "2026-11-23T15:10:02.481Z",
    },
  ],
});
named("RefundList", refundList, {
  description: "An order's refunds, oldest first",
  examples: [{ items: [refundExample], refunds_through: ["stripe", "adyen"] }],
});

import { page, pageQuery } from "@commerce/shared/platform/http/paging";
import { named } from "@commerce/shared/platform/openapi";
import { t } from "elysia";
import { reviewReasons, reviewResolutions, reviewStatuses } from "../../db/schema";
import { choice, integer, text } from "../../lib/fields";

export const review = t.Object({
  id: integer(),
  order_id: integer(),
  notification_id: t.String(),
  event: t.String({
    description: "payment.succeeded, payment.refunded, payment.failed or payment.disputed",
  }),
  reason: choice(reviewReasons),
  amount: integer({ description: "The notification's amount, in minor units of its currency" }),
  currency: t.String({ description: "The notification's currency" }),
  expected_amount: t.Nullable(
    integer({
      description:
        "What the order asks, in minor units of its currency; null when the order is unknown",
    }),
  ),
  expected_currency: t.Nullable(
    t.String({ description: "The order's currency; null when the order is unknown" }),
  ),
  created_at: t.String({ format: "date-time" }),
  status: choice(reviewStatuses),
  resolution: t.Nullable(choice(reviewResolutions)),
  note: t.Nullable(t.String()),
  resolved_at: t.Nullable(t.String({ format: "date-time" })),
});

export const reviewQuery = t.Object(
  // `choice`: t.UnionEnum defaults to its first value, so no status listed only open.
  { ...pageQuery, status: t.Optional(choice(reviewStatuses)) },
  { additionalProperties: true },
);

export const reviewPage = page(review);

export const resolution = t.Object(
  {
    action: choice(["apply", "dismiss"], {
      description:
        "apply: make the move the notification asked for (pay or refund the order); dismiss: change no order",
    }),
    accept_amount: t.Optional(
      t.Boolean({
        description:
          "true to apply a mismatch or a partial_refund, whose amount or currency is not " +
          "what the order expected (compare amount and currency with expected_amount and " +
          "expected_currency); without it such an apply is 409. Ignored by dismiss.",
      }),
    ),
    note: text(1, 1000, "Why, for whoever reads the review later; may span lines", {
      multiline: true,
      name: "note",
    }),
  },
  { additionalProperties: false },
);

const reviewExample = {
  id: 7,
  order_id: 1021,
  notification_id: "evt_3PqK9aLkdIwHu7ix0e5RtYb2",
  event: "payment.succeeded",
  reason: "mismatch",
  amount: 1,
  currency: "USD",
  expected_amount: 75000,
  expected_currency: "USD",
  created_at: "2026-11-23T14:02:11.482Z",
  status: "open",
  resolution: null,
  note: null,
  resolved_at: null,
};

// D5: the document's named components.
named("PaymentReview", review, {
  description: "A payment message the api would not apply by itself, for a person to resolve",
  examples: [reviewExample],
});
named("PaymentReviewPage", reviewPage, {
  description: "A page of payment reviews",
  examples: [{ items: [reviewExample], page: 1, pages: 1, per_page: 20, total: 1 }],
});
named("PaymentReviewResolution", resolution, {
  examples: [
    { action: "apply", accept_amount: true, note: "Customer paid the old price; agreed by phone" },
  ],
});

export type Review = typeof review.static;
export type Resolution = typeof resolution.static;

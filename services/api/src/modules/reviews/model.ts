import { page, pageQuery } from "@commerce/shared/http/paging";
import { t } from "elysia";
import { reviewReasons, reviewResolutions, reviewStatuses } from "../../db/schema";
import { integer, text } from "../../lib/fields";

export const review = t.Object({
  id: integer(),
  order_id: integer(),
  notification_id: t.String(),
  event: t.String({ description: "payment.succeeded, payment.refunded or payment.failed" }),
  reason: t.UnionEnum(reviewReasons),
  amount: integer({ description: "The notification's amount, in minor units of its currency" }),
  currency: t.String(),
  created_at: t.String({ format: "date-time" }),
  status: t.UnionEnum(reviewStatuses),
  resolution: t.Nullable(t.UnionEnum(reviewResolutions)),
  note: t.Nullable(t.String()),
  resolved_at: t.Nullable(t.String({ format: "date-time" })),
});

export const reviewQuery = t.Object(
  // `default: undefined`: t.UnionEnum defaults to its first value, so no status listed only open.
  { ...pageQuery, status: t.Optional(t.UnionEnum(reviewStatuses, { default: undefined })) },
  { additionalProperties: true },
);

export const reviewPage = page(review);

export const resolution = t.Object(
  {
    action: t.UnionEnum(["apply", "dismiss"], {
      description:
        "apply: make the move the notification asked for (pay or refund the order); dismiss: change no order",
    }),
    note: text(1, 1000, "Why, for whoever reads the review later"),
  },
  { additionalProperties: false },
);

export type Review = typeof review.static;
export type Resolution = typeof resolution.static;

import { integer, urlInt } from "@commerce/shared/platform/http/fields";
import { named } from "@commerce/shared/platform/openapi";
import { t } from "elysia";

const timestamp = (description: string) => t.String({ format: "date-time", description });

export const refusalExample = t.Object({
  at: timestamp("When it was refused"),
  source_ip: t.String({ description: "The client address the webhook saw" }),
  reason: t.String({ examples: ["signature_mismatch"] }),
  order_id: t.Union([integer(), t.Null()], {
    description: "The order the body claimed, when it parsed; null otherwise",
  }),
});

export const refusalGroup = t.Object({
  provider: t.String({ examples: ["stripe"] }),
  reason: t.String({
    description:
      "Why: signature_missing, signature_malformed, signature_stale, signature_future, " +
      "signature_mismatch, credentials (401); invalid_json, invalid_schema (400); too_large " +
      "(413); unsupported_media_type (415)",
    examples: ["signature_mismatch"],
  }),
  count: integer({ minimum: 1, description: "Refusals since `since`, every replica's" }),
  first_at: timestamp("The first of them"),
  last_at: timestamp("The latest of them"),
  examples: t.Array(refusalExample, {
    description:
      "The latest few, newest first (with order_id: the first few and the latest few); never a body or a signature",
  }),
});

export const refusalList = named(
  "RefusedNotifications",
  t.Object({ items: t.Array(refusalGroup) }),
  {
    description: "Refused notifications of the last 24 hours, by provider and reason",
    examples: [
      {
        items: [
          {
            provider: "stripe",
            reason: "signature_mismatch",
            count: 2,
            first_at: "2026-11-23T14:02:11.482Z",
            last_at: "2026-11-23T14:05:40.011Z",
            examples: [
              {
                at: "2026-11-23T14:05:40.011Z",
                source_ip: "198.51.100.7",
                reason: "signature_mismatch",
                order_id: 1021,
              },
            ],
          },
        ],
      },
    ],
  },
);

export const refusalQuery = t.Object({
  since: t.Optional(
    t.String({
      format: "date-time",
      description: "From when (ISO 8601); at most, and by default, 24 hours back",
    }),
  ),
  order_id: t.Optional(urlInt("query", "order_id", 1, Number.MAX_SAFE_INTEGER)),
});

export type RefusalGroup = typeof refusalGroup.static;

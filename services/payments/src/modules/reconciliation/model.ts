import { paymentProviders } from "@commerce/shared/contract/messages";
import { choice, integer } from "@commerce/shared/platform/http/fields";
import { page, pageQuery } from "@commerce/shared/platform/http/paging";
import { named } from "@commerce/shared/platform/openapi";
import { t } from "elysia";

const timestamp = (description: string) => t.String({ format: "date-time", description });

/** B3: the kinds of run: a provider's (B1: Stripe's events and objects, Adyen's report) or B2's. */
export const runKinds = ["events", "objects", "report", "inbox"] as const;

/** B3: one reconciliation run as the operator lists it. */
export const reconciliationRun = t.Object({
  id: integer(),
  provider: t.Nullable(
    t.String({ description: "The provider it asked (stripe, adyen); null for inbox" }),
  ),
  kind: choice(runKinds, {
    description:
      "events (a provider's event list, Stripe), objects (a provider's payments, refunds and disputes compared with what is stored, Stripe), report (Adyen's payment accounting report), or inbox (what payments published against what the api applied)",
    examples: ["events"],
  }),
  window_from: timestamp("The start of what it compared"),
  window_to: timestamp("The end of what it compared"),
  started_at: timestamp("When it started"),
  finished_at: t.Nullable(
    timestamp("When it ended; null while it runs, or when it was cut off by a crash"),
  ),
  checked: integer({
    description:
      "What it compared: events or objects the provider listed, report lines, or (inbox) published messages",
  }),
  found: integer({
    description:
      "What it found that nothing stored told of: events not stored, object states no stored notification explains, or (inbox) notifications never applied",
  }),
  applied: integer({
    description:
      "What it repaired: notifications stored now and processed as a webhook's, refunds confirmed, or (inbox) messages published again",
  }),
  errors: integer({
    description:
      "Failures that cut it short (the provider's API down, slow or 5xx, the database, or for inbox the api did not answer); 0 when complete. A run with errors leaves its checkpoint: the next covers its window again",
  }),
});

export const runsQuery = t.Object({
  ...pageQuery,
  kind: t.Optional(
    choice(runKinds, {
      error: { path: "/kind", message: `kind must be one of ${runKinds.join(", ")}` },
    }),
  ),
  provider: t.Optional(
    choice(paymentProviders, {
      error: {
        path: "/provider",
        message: `provider must be one of ${paymentProviders.join(", ")}`,
      },
    }),
  ),
});

export const runsPage = named("ReconciliationRunPage", page(reconciliationRun), {
  description: "Reconciliation runs, newest first",
  examples: [
    {
      items: [
        {
          id: 4127,
          provider: "stripe",
          kind: "events",
          window_from: "2026-11-28T04:01:02.418Z",
          window_to: "2026-11-28T04:11:02.418Z",
          started_at: "2026-11-28T04:11:02.421Z",
          finished_at: "2026-11-28T04:11:02.903Z",
          checked: 212,
          found: 1,
          applied: 1,
          errors: 0,
        },
      ],
      page: 1,
      pages: 1,
      per_page: 20,
      total: 1,
    },
  ],
});

export type ReconciliationRun = typeof reconciliationRun.static;

import { choice, integer } from "@commerce/shared/platform/http/fields";
import { page, pageQuery } from "@commerce/shared/platform/http/paging";
import { named } from "@commerce/shared/platform/openapi";
import { t } from "elysia";

const timestamp = (description: string) => t.String({ format: "date-time", description });

/** B3: one reconciliation run as the operator lists it. */
export const reconciliationRun = t.Object({
  id: integer(),
  provider: t.Nullable(
    t.String({ description: "The provider it asked (stripe, adyen); null for inbox" }),
  ),
  kind: t.String({
    description:
      "events (Stripe's event list), objects (Stripe's payments, refunds and disputes compared with what is stored), report (Adyen's payment accounting report), or inbox (what payments published against what the api applied)",
    examples: ["inbox"],
  }),
  window_from: timestamp("The start of what it compared"),
  window_to: timestamp("The end of what it compared"),
  started_at: timestamp("When it started"),
  finished_at: t.Nullable(
    timestamp("When it ended; null while it runs, or when it was cut off by a crash"),
  ),
  checked: integer({
    description:
      "What it compared: for events and objects, what the provider listed; for report, the report's lines; for inbox, published messages",
  }),
  found: integer({
    description:
      "What it found missing: for events, events not stored yet; for objects and report, states or lines no stored notification explained; for inbox, notifications never applied",
  }),
  applied: integer({
    description:
      "What it repaired: for events, objects and report, notifications stored now (objects: and refunds the shop asked for confirmed); for inbox, messages published again",
  }),
  errors: integer({
    description:
      "Failures (for events and objects: 1 when the provider's API was down, slow or 5xx, or the database failed, and the next run covers the window again; for inbox: the api did not answer, the run cut short; for report: malformed lines, and 1 when the download failed or the report was not read); 0 when complete",
  }),
});

/** B3: what a run compares: a provider's events, objects or report, or payments against the api. */
export const runKinds = ["events", "objects", "report", "inbox"] as const;
export type RunKind = (typeof runKinds)[number];

export const runsQuery = t.Object({
  ...pageQuery,
  kind: t.Optional(
    choice(runKinds, {
      error: { path: "/kind", message: `kind must be one of ${runKinds.join(", ")}` },
    }),
  ),
  provider: t.Optional(
    choice(["stripe", "adyen"] as const, {
      error: { path: "/provider", message: "provider must be one of stripe, adyen" },
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
          provider: null,
          kind: "inbox",
          window_from: "2026-11-28T04:10:12.402Z",
          window_to: "2026-11-28T04:11:02.418Z",
          started_at: "2026-11-28T04:11:32.418Z",
          finished_at: "2026-11-28T04:11:32.431Z",
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

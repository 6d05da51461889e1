import type { Metrics } from "@commerce/shared/platform/metrics";

/**
 * B1, B3: the counters every provider reconciliation shares (Stripe's runs, Adyen's reports),
 * declared once so their help texts are one.
 */
export function reconciliationMetrics(metrics: Metrics) {
  return {
    runs: metrics.counter(
      "reconciliation_runs_total",
      "B1, B3: reconciliation runs by provider, kind (events, objects, report) and outcome (complete, failed; refused: a report never fetched)",
      ["provider", "kind", "outcome"],
    ),
    found: metrics.counter(
      "reconciliation_found_total",
      "B1, B3: provider states no stored notification explained, found by reconciliation and stored (webhooks are failing)",
      ["provider", "kind"],
    ),
    skipped: metrics.counter(
      "reconciliation_skipped_total",
      "B1: list items, reports and report lines not read, by provider and reason (other_mode, other_account, other_merchant_account, no_order, malformed, malformed_line, too_large, page_too_large, url_outside_prefix, ...)",
      ["provider", "reason"],
    ),
  };
}

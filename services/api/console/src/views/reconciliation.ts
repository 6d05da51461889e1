import { h } from "../dom";
import { money, time } from "../format";
import { answerOf, payments } from "../services";
import { empty, link, table } from "../ui";

type Run = {
  id: number;
  provider: string | null;
  kind: string;
  window_from: string;
  window_to: string;
  started_at: string;
  finished_at: string | null;
  checked: number;
  found: number;
  applied: number;
  errors: number;
};

/** B3: each kind of run, as an operator reads it, and the provider it asks. */
const kinds = [
  { kind: "events", provider: "stripe", name: "Stripe events" },
  { kind: "objects", provider: "stripe", name: "Stripe payments, refunds and disputes" },
  { kind: "report", provider: "adyen", name: "Adyen payment accounting report" },
  { kind: "inbox", provider: undefined, name: "Payments against the api" },
] as const;

/** Whether a run completed, is running, or was cut short, in words. */
function outcomeOf(run: Run): string {
  if (run.errors > 0) return "Cut short: the next run covers its window again";
  if (run.finished_at === null) return "Running (or stopped by a crash)";
  return "Complete";
}

/** B3: the last run of one kind, or undefined when it never ran. */
async function lastRun(
  kind: (typeof kinds)[number]["kind"],
  provider: (typeof kinds)[number]["provider"],
): Promise<Run | undefined> {
  const client = payments();
  if (!client) return undefined;
  const { items } = await answerOf(
    client.api.reconciliation.runs.get({
      query: { per_page: 1, kind, ...(provider ? { provider } : {}) },
    }),
    "Listing reconciliation runs",
  );
  return (items as Run[])[0];
}

/**
 * B3: the books' page: the last run of each kind (what it compared, found and repaired), and every
 * notification that reached payments only through reconciliation (its webhook never came): money
 * arriving that way means the provider's webhooks are failing.
 */
export async function reconciliationView() {
  const heading = h("h1", {}, "Reconciliation");
  const client = payments();
  if (!client)
    return [
      heading,
      empty("Not shown: the api has no PAYMENTS_PUBLIC_URL, so the console cannot reach payments."),
    ];
  const [runs, found] = await Promise.all([
    Promise.all(kinds.map(({ kind, provider }) => lastRun(kind, provider))),
    answerOf(
      client.api.notifications.get({ query: { per_page: 20, source: "reconciliation" } }),
      "Listing notifications found by reconciliation",
    ),
  ]);
  return [
    heading,
    h(
      "p",
      { class: "muted" },
      "Payments compares its books with each provider's and with the api's on a timer. A run that finds a payment, refund or dispute no webhook told of stores it as if the webhook had come, and the order moves with source “reconciliation”.",
    ),
    table(
      ["Compares", "Last run", "Window", "Outcome", "Checked", "Found", "Repaired"],
      kinds.map(({ name }, i) => {
        const run = runs[i];
        if (!run) return [name, "Never", "—", "—", "—", "—", "—"];
        return [
          name,
          time(run.started_at),
          h("span", {}, time(run.window_from), " to ", time(run.window_to)),
          outcomeOf(run),
          String(run.checked),
          String(run.found),
          String(run.applied),
        ];
      }),
      "The last run of each kind",
    ),
    h("h2", {}, "Found only by reconciliation"),
    found.items.length
      ? [
          h(
            "p",
            { class: "problem", role: "note" },
            `${found.total} notification${found.total === 1 ? "" : "s"} reached payments only through reconciliation: the provider's webhooks to this shop are failing or late. Check the provider's webhook settings and the refusals page.`,
          ),
          table(
            ["Received", "Provider", "Event", "Order", "Amount", "Notification"],
            found.items.map((item) => [
              time(item.received_at),
              item.provider,
              item.event,
              item.order_id === null
                ? "none named"
                : link(`/console/orders/${item.order_id}`, `Order ${item.order_id}`),
              item.amount === null || item.currency === null
                ? "—"
                : money(item.amount, item.currency),
              h("code", {}, item.key),
            ]),
            "Notifications found by reconciliation, newest first",
          ),
          h("p", {}, link("/console/notifications?source=reconciliation", "All of them")),
        ]
      : empty("None: every notification so far came by its webhook."),
  ];
}

import { h, show } from "../dom";
import { answerOf, api, payments, paymentsBase, SignedOut } from "../services";

async function ready(origin: string): Promise<string> {
  try {
    const answer = await fetch(`${origin}/ready`);
    if (answer.ok) return "ready";
    const problem = await answer.json().catch(() => ({}));
    return `not ready${problem.detail ? ` (${problem.detail})` : ""}`;
  } catch {
    return "unreachable";
  }
}

/** A service's figures from its admin status route (U3), or undefined when they cannot be read. */
async function statusOf<T>(
  request: Promise<{ data: T | null; error: { status: unknown; value: unknown } | null }>,
  what: string,
): Promise<T | undefined> {
  try {
    return await answerOf(request, what);
  } catch (error) {
    if (error instanceof SignedOut) throw error;
    return undefined;
  }
}

type State = "good" | "bad" | "unknown";

const item = (label: string, value: string, state: State) =>
  h("li", { class: `health-${state}` }, h("span", { class: "label" }, `${label}: `), value);

const count = (label: string, value: number | undefined, bad = (n: number) => n > 0) =>
  value === undefined || Number.isNaN(value)
    ? item(label, "unknown", "unknown")
    : item(label, String(value), bad(value) ? "bad" : "good");

/** The sum of the figures that could be read; undefined when none could. */
const sum = (...values: Array<number | null | undefined>) => {
  const known = values.filter((value): value is number => typeof value === "number");
  return known.length ? known.reduce((total, value) => total + value, 0) : undefined;
};

/**
 * U3's health line: both services' readiness (their public /ready), and from each service's
 * admin status route (GET /api/status, so it works where METRICS_TOKEN closes /metrics, N4) the
 * outbox backlogs and rows set aside, the payment consumer's lag, open reviews and endpoints the
 * api disabled for failing (H3), each a count over all of them.
 */
export async function refreshHealth(place: Element): Promise<void> {
  const client = payments();
  const [apiReady, paymentsReady, apiStatus, paymentsStatus] = await Promise.all([
    ready(location.origin),
    paymentsBase ? ready(paymentsBase) : Promise.resolve("not configured"),
    statusOf(api().api.status.get(), "Reading the api's status"),
    client ? statusOf(client.api.status.get(), "Reading the payments status") : undefined,
  ]);
  show(
    place,
    h(
      "ul",
      { class: "health" },
      item("api", apiReady, apiReady === "ready" ? "good" : "bad"),
      item("payments", paymentsReady, paymentsReady === "ready" ? "good" : "bad"),
      count(
        "Outbox backlog",
        sum(apiStatus?.outbox_backlog, paymentsStatus?.outbox_backlog),
        (n) => n > 100,
      ),
      count("Set aside", sum(apiStatus?.outbox_dead, paymentsStatus?.outbox_dead)),
      count("Consumer lag", apiStatus?.payment_consumer_lag ?? undefined, (n) => n > 100),
      count("Open reviews", apiStatus?.open_reviews ?? undefined),
      count("Failing endpoints", apiStatus?.failing_endpoints ?? undefined),
    ),
  );
}

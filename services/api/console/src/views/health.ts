import { type Child, h, show } from "../dom";
import { answerOf, api, payments, paymentsBase, SignedOut } from "../services";
import { link } from "../ui";

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

/** One figure; its value links to the list behind it (U7), when there is one. */
const item = (label: string, value: string, state: State, href?: string) =>
  h(
    "li",
    { class: `health-${state}` },
    h("span", { class: "label" }, `${label}: `),
    href && state !== "unknown" ? link(href, value) : value,
  );

const count = (
  label: string,
  value: number | null | undefined,
  href?: string,
  bad = (n: number) => n > 0,
) =>
  typeof value !== "number"
    ? item(label, "unknown", "unknown")
    : item(label, String(value), bad(value) ? "bad" : "good", href);

/** The sum of the figures that could be read; undefined when none could. */
const sum = (...values: Array<number | null | undefined>) => {
  const known = values.filter((value): value is number => typeof value === "number");
  return known.length ? known.reduce((total, value) => total + value, 0) : undefined;
};

/** Seconds as a person says them: "45 s", "12 min", "3 h 5 min". */
export function age(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** H3: a delivery pending longer than this means its endpoint is failing now (U7). */
const pendingTooLong = 5 * 60;

/**
 * U3, U7 "What is failing now?": both services' readiness, endpoints failing now (not counting
 * disabled ones, shown apart), the age of the oldest pending delivery, notifications refused in
 * the last hour, outbox backlog and rows set aside, the payment consumer's lag and open reviews,
 * each linked to the list behind it.
 */
export async function refreshHealth(place: Element): Promise<void> {
  const client = payments();
  const [apiReady, paymentsReady, apiStatus, paymentsStatus] = await Promise.all([
    ready(location.origin),
    paymentsBase ? ready(paymentsBase) : Promise.resolve("not configured"),
    statusOf(api().api.status.get(), "Reading the api's status"),
    client ? statusOf(client.api.status.get(), "Reading the payments status") : undefined,
  ]);
  const oldest = apiStatus?.oldest_pending_delivery_seconds;
  const figures: Child[] = [
    item("api", apiReady, apiReady === "ready" ? "good" : "bad"),
    item("payments", paymentsReady, paymentsReady === "ready" ? "good" : "bad"),
    count("Failing endpoints", apiStatus?.failing_endpoints, "/console/webhooks"),
    count("Disabled endpoints", apiStatus?.disabled_endpoints, "/console/webhooks"),
    apiStatus && oldest === null
      ? item("Oldest pending delivery", "none", "good")
      : typeof oldest === "number"
        ? item(
            "Oldest pending delivery",
            age(oldest),
            oldest > pendingTooLong ? "bad" : "good",
            "/console/webhooks",
          )
        : item("Oldest pending delivery", "unknown", "unknown"),
    count("Refused last hour", paymentsStatus?.refused_last_hour, "/console/refusals"),
    count("Set aside", sum(apiStatus?.outbox_dead, paymentsStatus?.outbox_dead), "/console/outbox"),
    count(
      "Outbox backlog",
      sum(apiStatus?.outbox_backlog, paymentsStatus?.outbox_backlog),
      undefined,
      (n) => n > 100,
    ),
    count("Consumer lag", apiStatus?.payment_consumer_lag, undefined, (n) => n > 100),
    count("Open reviews", apiStatus?.open_reviews, "/console/reviews"),
  ];
  show(place, h("ul", { class: "health" }, figures));
}

/** U7: at most every 10 s, and only while the tab is visible; once more when it comes back. */
export const healthEverySeconds = 10;

let timer: ReturnType<typeof setInterval> | undefined;
let shown: Element | undefined;
let lastRead = 0;

function read(place: Element) {
  lastRead = Date.now();
  void refreshHealth(place).catch((error) => {
    if (!(error instanceof SignedOut)) show(place, "Health unknown");
  });
}

/** The timer's and the tab's refresh: skipped while hidden, and never twice within 10 s. */
function refreshByItself() {
  if (document.visibilityState !== "visible" || !shown?.isConnected) return;
  if (Date.now() - lastRead < healthEverySeconds * 1000 - 250) return;
  read(shown);
}

/** Shows the health line in `place` now (a new view) and keeps it fresh by itself. */
export function keepHealthFresh(place: Element): void {
  shown = place;
  read(place);
  if (timer === undefined) {
    timer = setInterval(refreshByItself, healthEverySeconds * 1000);
    document.addEventListener("visibilitychange", refreshByItself);
  }
}

import { h } from "../dom";
import { time } from "../format";
import { answerOf, api, Problem, payments, SignedOut } from "../services";
import { empty, link, problemBox, table } from "../ui";

type AuditEntry = {
  at: string;
  actor: string;
  action: string;
  target: string;
  detail: Record<string, unknown>;
};
type AuditPage = { items: AuditEntry[]; pages: number };

const perPage = 50;

/** The detail beside the note, as one line of `key: value`; never a secret (V5 keeps none). */
function otherDetail(detail: Record<string, unknown>): string {
  return Object.entries(detail)
    .filter(([key]) => key !== "note")
    .map(
      ([key, value]) =>
        `${key.replaceAll("_", " ")}: ${typeof value === "object" ? JSON.stringify(value) : String(value)}`,
    )
    .join("; ");
}

/** A target as a link where the console has a page for it (`webhook-endpoint/3`). */
function targetOf(target: string) {
  const endpoint = target.match(/^webhook-endpoint\/(\d+)$/);
  if (endpoint) return link(`/console/webhooks/${endpoint[1]}`, target);
  return h("code", {}, target);
}

/**
 * U7 "Who did this, and why?": the actions that move no order (V5) — endpoint changes, retries,
 * replays — from the api's audit log and payments', merged newest first. Order moves are on each
 * order's timeline.
 */
export async function auditView(query: URLSearchParams) {
  const pageNumber = Number(query.get("page")) || 1;
  const client = payments();
  const [fromApi, fromPayments] = await Promise.all([
    answerOf(
      api().api.audit.get({ query: { page: pageNumber, per_page: perPage } }),
      "Reading the api's audit log",
    ) as Promise<AuditPage>,
    // One service's log that cannot be read leaves the other's shown, with the problem (U4).
    client
      ? (
          answerOf(
            client.api.audit.get({ query: { page: pageNumber, per_page: perPage } }),
            "Reading the payments audit log",
          ) as Promise<AuditPage>
        ).catch((error) => {
          if (error instanceof SignedOut) throw error;
          return error as Problem;
        })
      : Promise.resolve(undefined),
  ]);
  const paymentsProblem = fromPayments instanceof Problem ? fromPayments : undefined;
  const paymentsPage = fromPayments instanceof Problem ? undefined : fromPayments;
  const entries = [
    ...fromApi.items.map((entry) => ({ ...entry, service: "api" })),
    ...(paymentsPage?.items ?? []).map((entry) => ({ ...entry, service: "payments" })),
  ].sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
  const more = pageNumber < Math.max(fromApi.pages, paymentsPage?.pages ?? 0);
  return [
    h("h1", {}, "Audit log"),
    h(
      "p",
      { class: "muted" },
      "Who changed webhook endpoints, retried or replayed deliveries, and replayed payment notifications, with their note. Moves of an order are on that order's timeline.",
    ),
    client ? null : empty("Payments' audit log is not shown: the api has no PAYMENTS_PUBLIC_URL."),
    paymentsProblem ? problemBox(paymentsProblem) : null,
    entries.length
      ? table(
          ["At", "Who", "Action", "On", "Note", "Detail", "Service"],
          entries.map((entry) => [
            time(entry.at),
            h("strong", {}, entry.actor),
            entry.action.replaceAll("_", " "),
            targetOf(entry.target),
            typeof entry.detail.note === "string" ? entry.detail.note : "—",
            otherDetail(entry.detail) || "—",
            entry.service,
          ]),
          "Actions by people, newest first",
        )
      : empty("No one has changed an endpoint or replayed anything yet."),
    h(
      "nav",
      { class: "pager", "aria-label": "Pages" },
      pageNumber > 1 ? link(`/console/audit?page=${pageNumber - 1}`, "Previous page") : null,
      more ? link(`/console/audit?page=${pageNumber + 1}`, "Next page") : null,
    ),
  ];
}

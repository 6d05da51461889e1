import { h, show } from "../dom";
import { badge, time } from "../format";
import { answerOf } from "../services";
import { empty, link, navigate, notedAction, reportingIn, table } from "../ui";
import { recoverySection } from "./endpoint-recovery";
import { retryButton } from "./retry";
import { endpoints } from "./webhooks";

/** PATCH the endpoint's status with the admin's note (H1, V5: on the audit log), then show it again. */
const changeStatus = (id: number, status: "enabled" | "disabled") => async (note: string) => {
  await answerOf(
    endpoints()({ id }).patch({ status, note }),
    status === "enabled" ? "Enable endpoint" : "Disable endpoint",
  );
  navigate(`/console/webhooks/${id}`);
};

/** One endpoint and its deliveries, newest first, each with its attempts and "Retry". */
export async function endpointView(id: number, query: URLSearchParams) {
  const endpoint = await answerOf(endpoints()({ id }).get(), "Reading the endpoint");
  const status = query.get("status");
  const chosen =
    status === "pending" || status === "succeeded" || status === "failed" ? status : undefined;
  const pageNumber = Number(query.get("page")) || 1;
  const deliveries = await answerOf(
    endpoints()({ id }).deliveries.get({
      query: { page: pageNumber, per_page: 20, ...(chosen ? { status: chosen } : {}) },
    }),
    "Listing deliveries",
  );
  const here = `/console/webhooks/${id}`;
  const filter = h(
    "select",
    {
      id: "delivery-status",
      onchange: (event) => {
        const value = (event.target as HTMLSelectElement).value;
        navigate(value ? `${here}?status=${value}` : here);
      },
    },
    h("option", { value: "" }, "All"),
    ["pending", "succeeded", "failed"].map((s) =>
      h("option", { value: s, selected: s === chosen }, s),
    ),
  );
  const pageLink = (n: number, label: string) =>
    link(`${here}?page=${n}${chosen ? `&status=${chosen}` : ""}`, label);
  return [
    h("p", { class: "crumbs" }, link("/console/webhooks", "Webhooks")),
    h("div", { class: "title" }, h("h1", {}, `Endpoint ${endpoint.id}`), badge(endpoint.status)),
    h(
      "dl",
      { class: "facts" },
      [h("dt", {}, "URL"), h("dd", {}, h("code", {}, endpoint.url))],
      [h("dt", {}, "Events"), h("dd", {}, endpoint.events.join(", "))],
      endpoint.description ? [h("dt", {}, "Description"), h("dd", {}, endpoint.description)] : null,
      endpoint.disabled_reason
        ? [h("dt", {}, "Disabled because"), h("dd", {}, endpoint.disabled_reason)]
        : null,
      // H3 (v5): when and by whom, kept after it is enabled again: replay-missing starts there.
      endpoint.disabled_at
        ? [
            h("dt", {}, endpoint.status === "disabled" ? "Disabled" : "Last disabled"),
            h(
              "dd",
              {},
              time(endpoint.disabled_at),
              ` by ${endpoint.disabled_by ?? "the api (its attempts kept failing, or it answered 410)"}`,
            ),
          ]
        : null,
      [h("dt", {}, "Created"), h("dd", {}, time(endpoint.created_at))],
    ),
    // H3: an endpoint the api disabled for failing is repaired here once its receiver is back.
    // V5: the console asks why; the note is kept with the admin's name on the audit log.
    endpoint.status === "disabled"
      ? notedAction(
          "Enable endpoint",
          `Enable endpoint ${id}: its pending deliveries resume. Events of the time it was disabled have no delivery: use “Replay missing” below for them. Say why in the note; it is kept in the audit log with your name.`,
          changeStatus(id, "enabled"),
          "note-endpoint-enabled",
        )
      : notedAction(
          "Disable endpoint",
          // H3: what disabling loses, said before it is done, and how to get it back.
          `Disable endpoint ${id}: events that happen while it is disabled get no delivery at all, and its pending deliveries wait. After enabling it, use “Replay missing” with the time you disabled it to deliver what it missed. Say why in the note; it is kept in the audit log with your name.`,
          changeStatus(id, "disabled"),
          "note-endpoint-disabled",
        ),
    recoverySection(id, endpoint.disabled_at),
    h("h2", {}, "Deliveries"),
    h(
      "div",
      { class: "toolbar" },
      h("div", { class: "inline" }, h("label", { for: "delivery-status" }, "Status"), filter),
    ),
    deliveries.items.length
      ? h(
          "div",
          { class: "cards" },
          deliveries.items.map((delivery) => deliveryCard(id, delivery)),
        )
      : empty("No delivery here."),
    h(
      "nav",
      { class: "pager", "aria-label": "Pages" },
      pageNumber > 1 ? pageLink(pageNumber - 1, "Previous page") : null,
      pageNumber < deliveries.pages ? pageLink(pageNumber + 1, "Next page") : null,
    ),
  ];
}

type Delivery = {
  id: number;
  event_type: string;
  message_id: string;
  order_id: number | null;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  last_status_code: number | null;
  created_at: string;
};

function deliveryCard(endpointId: number, delivery: Delivery) {
  const attempts = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  let loaded = false;
  const details = h(
    "details",
    {
      ontoggle: () => {
        if (!details.open || loaded) return;
        loaded = true;
        void reportingIn(attempts, async () => {
          const full = await answerOf(
            endpoints()({ id: endpointId }).deliveries({ delivery_id: delivery.id }).get(),
            "Reading the attempts",
          );
          show(
            attempts,
            full.attempts_log.length
              ? table(
                  ["At", "Status code", "Duration", "Error", "Answer"],
                  full.attempts_log.map((attempt) => [
                    time(attempt.at),
                    attempt.status_code === null ? "—" : String(attempt.status_code),
                    `${attempt.duration_ms} ms`,
                    attempt.error ?? "",
                    attempt.response_body ? h("code", {}, attempt.response_body) : "",
                  ]),
                )
              : empty("No attempt yet."),
          );
        });
      },
    },
    h("summary", {}, `Attempts (${delivery.attempts})`),
    attempts,
  );
  return h(
    "article",
    { class: "card" },
    h("h3", {}, delivery.event_type, " ", badge(delivery.status)),
    h(
      "dl",
      { class: "facts" },
      [
        h("dt", {}, "Order"),
        h(
          "dd",
          {},
          delivery.order_id === null
            ? "—"
            : link(`/console/orders/${delivery.order_id}`, `Order ${delivery.order_id}`),
        ),
      ],
      [h("dt", {}, "Message"), h("dd", {}, h("code", {}, delivery.message_id))],
      [
        h("dt", {}, "Last status code"),
        h("dd", {}, delivery.last_status_code === null ? "—" : String(delivery.last_status_code)),
      ],
      [h("dt", {}, "Next attempt"), h("dd", {}, time(delivery.next_attempt_at))],
      [h("dt", {}, "Created"), h("dd", {}, time(delivery.created_at))],
    ),
    details,
    // U7: the new attempt's outcome shows on this card; reopening "Attempts" reads them again.
    retryButton(endpointId, delivery.id, {
      delivered: delivery.status === "succeeded",
      done: () => {
        loaded = false;
        details.open = false;
      },
    }),
  );
}

import { h, show } from "../dom";
import { badge, time } from "../format";
import { answerOf, api } from "../services";
import { empty, link, reportingIn, table } from "../ui";

/** What an endpoint may subscribe to: every order event (M3), or all of them ("*"). */
const subscribable = [
  ["*", "All order events"],
  ["orders.created", "orders.created"],
  ["orders.paid", "orders.paid"],
  ["orders.cancelled", "orders.cancelled"],
  ["orders.refunded", "orders.refunded"],
  ["orders.payment_failed", "orders.payment_failed"],
] as const;

export const endpoints = () => api().api["webhook-endpoints"];

/** U3: the outgoing webhook endpoints; "Create endpoint" shows the new secret once. */
export async function webhooksView(query: URLSearchParams) {
  const pageNumber = Number(query.get("page")) || 1;
  const list = h("div", {});
  await listInto(list, pageNumber);
  return [
    h("h1", {}, "Webhooks"),
    list,
    createForm(() => reportingIn(list, () => listInto(list, pageNumber))),
  ];
}

async function listInto(place: Element, pageNumber: number) {
  const page = await answerOf(
    endpoints().get({ query: { page: pageNumber, per_page: 20 } }),
    "Listing webhook endpoints",
  );
  const pageLink = (n: number, label: string) => link(`/console/webhooks?page=${n}`, label);
  show(
    place,
    page.items.length
      ? table(
          ["Endpoint", "Description", "URL", "Events", "Status", "Now", "Created"],
          page.items.map((endpoint) => [
            link(`/console/webhooks/${endpoint.id}`, `Endpoint ${endpoint.id}`),
            endpoint.description || h("span", { class: "muted" }, "—"),
            h("code", {}, endpoint.url),
            endpoint.events.join(", "),
            [
              badge(endpoint.status),
              endpoint.disabled_reason ? ` ${endpoint.disabled_reason}` : null,
            ],
            endpoint.status === "enabled" ? failingState(endpoint) : "—",
            time(endpoint.created_at),
          ]),
        )
      : empty("No endpoint receives the shop's order events yet."),
    h(
      "nav",
      { class: "pager", "aria-label": "Pages" },
      pageNumber > 1 ? pageLink(pageNumber - 1, "Previous page") : null,
      pageNumber < page.pages ? pageLink(pageNumber + 1, "Next page") : null,
    ),
  );
}

/**
 * U7: whether an enabled endpoint is failing now, as the api decides it (`failing_now`, the rule
 * the health line counts by): its last attempt failed since `failing_since`, or a delivery of it
 * has been pending over 5 minutes.
 */
function failingState(endpoint: { failing_now: boolean; failing_since: string | null }) {
  if (!endpoint.failing_now) return badge("ok");
  const failing = h("span", { class: "badge badge-failing" }, "failing");
  return endpoint.failing_since
    ? [failing, " since ", time(endpoint.failing_since)]
    : [failing, " (a delivery pending over 5 min)"];
}

function createForm(refreshList: () => Promise<void>) {
  const url = h("input", { id: "endpoint-url", name: "url", type: "url", required: true });
  const description = h("input", { id: "endpoint-description", name: "description" });
  const outcome = h("div", { class: "messages", role: "status" });
  const events = subscribable.map(([value, label], i) => {
    const box = h("input", {
      type: "checkbox",
      id: `event-${i}`,
      name: "events",
      value,
      checked: value === "orders.paid",
    });
    return h("div", { class: "check" }, box, h("label", { for: `event-${i}` }, label));
  });
  return h(
    "section",
    { "aria-labelledby": "create-endpoint" },
    h("h2", { id: "create-endpoint" }, "New endpoint"),
    h(
      "form",
      {
        class: "resolve",
        onsubmit: (event) => {
          event.preventDefault();
          const form = new FormData(event.target as HTMLFormElement);
          const chosen = form.getAll("events").map(String);
          void reportingIn(outcome, async () => {
            const created = await answerOf(
              endpoints().post({
                url: url.value.trim(),
                events: chosen,
                ...(description.value.trim() ? { description: description.value.trim() } : {}),
              }),
              "Create endpoint",
            );
            // H7: the secret is in this answer only; the console keeps it nowhere.
            show(
              outcome,
              h(
                "div",
                { class: "secret" },
                h(
                  "p",
                  {},
                  h("strong", {}, `Endpoint ${created.id} created.`),
                  " Its signing secret, shown this once — copy it now:",
                ),
                h("code", {}, created.secret),
                h("p", {}, link(`/console/webhooks/${created.id}`, "See its deliveries")),
              ),
            );
            (event.target as HTMLFormElement).reset();
            await refreshList();
          });
        },
      },
      h("label", { for: "endpoint-url" }, "URL"),
      url,
      h("fieldset", { class: "events" }, h("legend", {}, "Events"), events),
      h("label", { for: "endpoint-description" }, "Description (optional)"),
      description,
      h("div", { class: "actions" }, h("button", { type: "submit" }, "Create endpoint")),
      outcome,
    ),
  );
}

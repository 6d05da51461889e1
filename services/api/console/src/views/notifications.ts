import type { PaymentsClient } from "@commerce/client/browser";
import { h } from "../dom";
import { money, time } from "../format";
import { answerOf, payments } from "../services";
import { empty, link, navigate, notedAction, rawBody, reportingIn } from "../ui";

/** A stored notification as payments lists it (V3), typed from its own route. */
type Summary = NonNullable<
  Awaited<ReturnType<PaymentsClient["api"]["notifications"]["get"]>>["data"]
>["items"][number];

/** The providers payments knows (section 15). */
const providers = ["generic", "stripe", "adyen"] as const;
type Provider = (typeof providers)[number];
const isProvider = (value: string | null): value is Provider =>
  providers.includes(value as Provider);

/** An amount when the notification named one (a provider's may not). */
const amountOf = (amount: number | null, currency: string | null) =>
  amount === null || currency === null ? "—" : money(amount, currency);

/**
 * One stored notification: what it said, whether its message went out, its raw body behind a
 * "Show raw body" disclosure (read from payments only when opened: a list of 100 notifications
 * costs payments one request, not 101), and "Replay" with "Confirm".
 */
export function notificationCard(notification: Summary) {
  const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  let loaded = false;
  const load = () => {
    if (loaded) return;
    loaded = true;
    void reportingIn(body, async () => {
      const client = payments();
      if (!client) return;
      const detail = await answerOf(
        client.api.notifications({ id: notification.id }).get(),
        "Reading the notification",
      );
      body.replaceChildren(rawBody(detail.raw_body));
    });
  };
  // A native disclosure: focusable, and Enter or Space opens it, with no script of ours.
  const raw = h(
    "details",
    { ontoggle: () => raw.open && load() },
    h("summary", {}, "Show raw body"),
    body,
  );
  const replayResult = h("div", { role: "status" });
  return h(
    "article",
    { class: "card" },
    h("h3", {}, notification.event, " ", h("code", {}, notification.id)),
    h(
      "dl",
      { class: "facts" },
      "provider" in notification
        ? [h("dt", {}, "Provider"), h("dd", {}, String(notification.provider))]
        : null,
      [
        h("dt", {}, "Order"),
        h(
          "dd",
          {},
          notification.order_id === null
            ? "none named"
            : link(`/console/orders/${notification.order_id}`, `Order ${notification.order_id}`),
        ),
      ],
      [h("dt", {}, "Amount"), h("dd", {}, amountOf(notification.amount, notification.currency))],
      "payment_ref" in notification
        ? [h("dt", {}, "Payment ref"), h("dd", {}, h("code", {}, String(notification.payment_ref)))]
        : null,
      [h("dt", {}, "Received"), h("dd", {}, time(notification.received_at))],
      [
        h("dt", {}, "Message published"),
        h(
          "dd",
          {},
          notification.published_at ? time(notification.published_at) : "not yet, or none",
        ),
      ],
      [h("dt", {}, "From"), h("dd", {}, notification.source_ip)],
      "source" in notification
        ? [
            h("dt", {}, "Arrived"),
            h(
              "dd",
              {},
              notification.source === "reconciliation"
                ? "Found by reconciliation: its webhook never came"
                : "By webhook",
            ),
          ]
        : null,
    ),
    raw,
    // V5: a replay says why; the note and the admin are in payments' audit log.
    notedAction(
      "Replay",
      `Replay the message of ${notification.id}? Say why in the note; it is kept in the audit log with your name.`,
      async (note) => {
        const client = payments();
        if (!client) return;
        const queued = await answerOf(
          client.api.notifications({ id: notification.id }).replay.post({ note }),
          "Replay",
        );
        replayResult.replaceChildren(
          `Replay queued at ${queued.requested_at} as message ${queued.message_id}.`,
        );
      },
      `note-replay-${notification.id.replace(/[^A-Za-z0-9_-]/g, "_")}`,
    ),
    replayResult,
  );
}

/** U3: every stored notification, filtered by order, event and provider, a page at a time. */
export async function notificationsView(query: URLSearchParams) {
  const client = payments();
  const heading = h("h1", {}, "Notifications");
  if (!client)
    return [
      heading,
      empty("Not shown: the api has no PAYMENTS_PUBLIC_URL, so the console cannot reach payments."),
    ];
  const orderId = Number(query.get("order_id")) || undefined;
  const event = query.get("event") || undefined;
  const provider = query.get("provider");
  const source = query.get("source") === "reconciliation" ? "reconciliation" : undefined;
  const pageNumber = Number(query.get("page")) || 1;
  const page = await answerOf(
    client.api.notifications.get({
      query: {
        per_page: 20,
        page: pageNumber,
        ...(orderId ? { order_id: orderId } : {}),
        ...(event ? { event } : {}),
        ...(isProvider(provider) ? { provider } : {}),
        ...(source ? { source } : {}),
      },
    }),
    "Listing notifications",
  );
  const field = (id: string, label: string, value: string | undefined, attrs = {}) =>
    h(
      "div",
      { class: "field" },
      h("label", { for: id }, label),
      h("input", { id, name: id.replace("filter-", ""), value: value ?? "", ...attrs }),
    );
  const filters = h(
    "form",
    {
      class: "toolbar",
      onsubmit: (submit) => {
        submit.preventDefault();
        const form = new FormData(submit.target as HTMLFormElement);
        const next = new URLSearchParams();
        for (const name of ["order_id", "event", "provider", "source"]) {
          const value = String(form.get(name) ?? "").trim();
          if (value) next.set(name, value);
        }
        navigate(`/console/notifications${next.size ? `?${next}` : ""}`);
      },
    },
    field("filter-order_id", "Order", orderId ? String(orderId) : undefined, {
      inputmode: "numeric",
      pattern: "[0-9]+",
    }),
    field("filter-event", "Event", event, { placeholder: "payment.succeeded" }),
    h(
      "div",
      { class: "field" },
      h("label", { for: "filter-provider" }, "Provider"),
      h(
        "select",
        { id: "filter-provider", name: "provider" },
        h("option", { value: "" }, "Any"),
        providers.map((p) => h("option", { value: p, selected: p === provider }, p)),
      ),
    ),
    h(
      "div",
      { class: "field" },
      h("label", { for: "filter-source" }, "Arrived"),
      h(
        "select",
        { id: "filter-source", name: "source" },
        h("option", { value: "" }, "Any way"),
        h(
          "option",
          { value: "reconciliation", selected: source === "reconciliation" },
          "Found by reconciliation",
        ),
      ),
    ),
    h("button", { type: "submit" }, "Filter"),
  );
  const pageLink = (n: number, label: string) => {
    const next = new URLSearchParams(query);
    next.set("page", String(n));
    return link(`/console/notifications?${next}`, label);
  };
  return [
    heading,
    filters,
    h("p", { class: "muted" }, `${page.total} notification${page.total === 1 ? "" : "s"}`),
    page.items.length
      ? h(
          "div",
          { class: "cards" },
          page.items.map((item) => notificationCard(item)),
        )
      : empty("No notification matches."),
    h(
      "nav",
      { class: "pager", "aria-label": "Pages" },
      pageNumber > 1 ? pageLink(pageNumber - 1, "Previous page") : null,
      pageNumber < page.pages ? pageLink(pageNumber + 1, "Next page") : null,
    ),
  ];
}

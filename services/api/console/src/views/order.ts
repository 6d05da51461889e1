import { h } from "../dom";
import { badge, money, time } from "../format";
import { answerOf, api, payments } from "../services";
import { confirmedAction, empty, link, navigate, reportingIn, table } from "../ui";
import { notificationCard } from "./notifications";

type Move = { label: string; status: "paid" | "cancelled" | "refunded" };

/** The moves an admin may make from each status (L1), with the names U3 gives them. */
const movesFrom: Record<string, Move[]> = {
  created: [
    { label: "Mark paid", status: "paid" },
    { label: "Cancel order", status: "cancelled" },
  ],
  paid: [{ label: "Refund", status: "refunded" }],
};

/** U3: one order, its lines, its timeline, its payment notifications and the moves it allows. */
export async function orderView(orderId: number) {
  const order = await answerOf(api().api.orders({ order_id: orderId }).get(), "Reading the order");
  const timeline = await answerOf(
    api().api.orders({ order_id: orderId }).events.get(),
    "Reading the order's timeline",
  );
  const notifications = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  void reportingIn(notifications, () => showNotifications(notifications, orderId));

  const moves = movesFrom[order.status] ?? [];
  return [
    h("p", { class: "crumbs" }, link("/console", "Orders")),
    h("div", { class: "title" }, h("h1", {}, `Order ${order.order_id}`), badge(order.status)),
    h(
      "dl",
      { class: "facts" },
      fact("Amount", money(order.amount, order.currency)),
      fact("Created", time(order.created_at)),
      order.expires_at ? fact("Expires", time(order.expires_at)) : null,
      order.paid_at ? fact("Paid", time(order.paid_at)) : null,
      order.cancelled_at ? fact("Cancelled", time(order.cancelled_at)) : null,
      order.cancel_reason ? fact("Cancel reason", order.cancel_reason) : null,
      order.refunded_at ? fact("Refunded", time(order.refunded_at)) : null,
    ),
    h(
      "section",
      { "aria-labelledby": "moves" },
      h("h2", { id: "moves" }, "Actions"),
      moves.length
        ? h(
            "div",
            { class: "actions" },
            moves.map((move) =>
              confirmedAction(
                move.label,
                `${move.label}: order ${order.order_id} becomes ${move.status}.`,
                async () => {
                  await answerOf(
                    api().api.orders({ order_id: orderId }).patch({ status: move.status }),
                    move.label,
                  );
                  navigate(`/console/orders/${orderId}`);
                },
              ),
            ),
          )
        : empty(`A ${order.status} order allows no move.`),
    ),
    h(
      "section",
      { "aria-labelledby": "lines" },
      h("h2", { id: "lines" }, "Lines"),
      table(
        ["Product", "Name", "Quantity", "Unit price", "Amount"],
        [
          ...order.items.map((item) => [
            String(item.product_id),
            item.name,
            String(item.qty),
            money(item.unit_price, order.currency),
            money(item.amount, order.currency),
          ]),
          [
            "",
            h("strong", {}, "Total"),
            "",
            "",
            h("strong", {}, money(order.amount, order.currency)),
          ],
        ],
      ),
    ),
    h(
      "section",
      { "aria-labelledby": "timeline" },
      h("h2", { id: "timeline" }, "Timeline"),
      h(
        "ol",
        { class: "timeline" },
        timeline.items.map((entry) =>
          h(
            "li",
            {},
            h("div", { class: "when" }, time(entry.at)),
            h(
              "div",
              {},
              badge(entry.type),
              " ",
              h("span", { class: "source" }, `source: ${entry.source}`),
              entry.notification_id
                ? h("div", {}, "notification ", h("code", {}, entry.notification_id))
                : null,
              detailList(entry.detail),
            ),
          ),
        ),
      ),
    ),
    h(
      "section",
      { "aria-labelledby": "payment-notifications" },
      h("h2", { id: "payment-notifications" }, "Payment notifications"),
      notifications,
    ),
  ];
}

const fact = (name: string, value: Node | string) => [h("dt", {}, name), h("dd", {}, value)];

/** How a timeline detail's key reads; others read as themselves, `_` as a space. */
const detailLabels: Record<string, string> = { review_id: "review", payment_ref: "payment ref" };

/**
 * A timeline entry's detail (T1: `{"reason": "mismatch", "review_id": 7}`) as a small list of
 * its keys and values, so "why is this order not paid?" reads at a glance; the review it opened
 * is a link to it, a nested value is one line of text.
 */
function detailList(detail: Record<string, unknown>) {
  const entries = Object.entries(detail);
  if (!entries.length) return null;
  return h(
    "dl",
    { class: "detail" },
    entries.map(([key, value]) => [
      h("dt", {}, detailLabels[key] ?? key.replaceAll("_", " ")),
      h(
        "dd",
        {},
        key === "review_id" && typeof value === "number"
          ? link(`/console/reviews/${value}`, `Review ${value}`)
          : key === "payment_ref"
            ? h("code", {}, compact(value))
            : compact(value),
      ),
    ]),
  );
}

/** A detail's value as one line: text as it is, a list comma-separated, an object `key: value`. */
function compact(value: unknown): string {
  if (value === null || value === undefined) return "—";
  if (Array.isArray(value)) return `[${value.map(compact).join(", ")}]`;
  if (typeof value === "object")
    return `{${Object.entries(value)
      .map(([key, inner]) => `${key}: ${compact(inner)}`)
      .join(", ")}}`;
  return String(value);
}

async function showNotifications(place: Element, orderId: number) {
  const client = payments();
  if (!client) {
    place.replaceChildren(
      empty("Not shown: the api has no PAYMENTS_PUBLIC_URL, so the console cannot reach payments."),
    );
    return;
  }
  const page = await answerOf(
    client.api.notifications.get({ query: { order_id: orderId, per_page: 100 } }),
    "Listing the order's notifications",
  );
  place.replaceChildren(
    ...(page.items.length
      ? page.items.map((item) => notificationCard(item))
      : [empty("Payments holds no notification for this order.")]),
    // U4: beyond one page, the rest are a link away rather than silently left out.
    ...(page.total > page.items.length
      ? [
          h(
            "p",
            {},
            link(
              `/console/notifications?order_id=${orderId}`,
              `All ${page.total} notifications of order ${orderId}`,
            ),
          ),
        ]
      : []),
  );
}

import { h } from "../dom";
import { badge, money, time } from "../format";
import { answerOf, api, payments } from "../services";
import { empty, link, reportingIn, table } from "../ui";
import { deliveriesOfOrder } from "./deliveries-of-order";
import { notificationCard } from "./notifications";
import { orderMoves } from "./order-moves";
import { refundsOfOrder } from "./refunds-of-order";
import { refusalsOfOrder } from "./refusals";
import { openReviewsOf, timelineList } from "./timeline";

/** A section of the order's page filled by its own read, so one failing read hides nothing else. */
function loading(fill: (place: Element) => Promise<void>) {
  const place = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  void reportingIn(place, () => fill(place));
  return place;
}

const section = (id: string, title: string, ...children: (Node | null)[]) =>
  h("section", { "aria-labelledby": id }, h("h2", { id }, title), ...children);

/**
 * U3, U7: one order — its lines, timeline (who and why), open reviews, the notifications payments
 * took and refused for it ("Why is order N not paid?"), its outgoing webhook deliveries ("Did the
 * warehouse hear of order N?") and the moves it allows.
 */
export async function orderView(orderId: number) {
  const order = await answerOf(api().api.orders({ order_id: orderId }).get(), "Reading the order");
  const timeline = await answerOf(
    api().api.orders({ order_id: orderId }).events.get(),
    "Reading the order's timeline",
  );
  const openReviews = openReviewsOf(timeline.items);
  return [
    h("p", { class: "crumbs" }, link("/console", "Orders")),
    h("div", { class: "title" }, h("h1", {}, `Order ${order.order_id}`), badge(order.status)),
    openReviews.length
      ? h(
          "p",
          { class: "notice", role: "note" },
          "A payment of this order waits for a person: ",
          openReviews.map((id, i) => [
            i ? ", " : null,
            link(`/console/reviews/${id}`, `open review ${id}`),
          ]),
          ".",
        )
      : null,
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
      order.refunded_amount
        ? fact("Given back", money(order.refunded_amount, order.currency))
        : null,
    ),
    section(
      "refunds",
      "Refunds",
      loading((place) => refundsOfOrder(place, order, providerOf(timeline.items))),
    ),
    orderMoves(order, openReviews),
    section(
      "lines",
      "Lines",
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
    section("timeline", "Timeline", timelineList(timeline.items)),
    section(
      "payment-notifications",
      "Payment notifications",
      loading((place) => showNotifications(place, orderId)),
    ),
    section(
      "refused-notifications",
      "Refused by payments",
      loading((place) => refusalsOfOrder(place, orderId)),
    ),
    section(
      "webhook-deliveries",
      "Webhook deliveries",
      loading((place) => deliveriesOfOrder(place, orderId)),
    ),
  ];
}

/** G5: the provider of the payment that paid the order, from its latest `paid` entry. */
const providerOf = (items: { type: string; detail: Record<string, unknown> }[]) => {
  const paid = items.findLast((item) => item.type === "paid");
  return typeof paid?.detail.provider === "string" ? paid.detail.provider : undefined;
};

const fact = (name: string, value: Node | string) => [h("dt", {}, name), h("dd", {}, value)];

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

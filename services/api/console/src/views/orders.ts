import { h } from "../dom";
import { badge, money, time } from "../format";
import { answerOf, api } from "../services";
import { empty, link, navigate, table } from "../ui";

const statuses = ["created", "paid", "cancelled", "refunded"] as const;
type Status = (typeof statuses)[number];

const isStatus = (value: string | null): value is Status => statuses.includes(value as Status);

/** U3: every order, newest first, by status, a page at a time (`next_after`), and "Order id". */
export async function ordersView(query: URLSearchParams) {
  const status = query.get("status");
  const after = Number(query.get("after")) || undefined;
  const page = await answerOf(
    api().api.orders.get({
      query: { per_page: 20, ...(isStatus(status) ? { status } : {}), ...(after ? { after } : {}) },
    }),
    "Listing orders",
  );
  const withQuery = (changes: Record<string, string | undefined>) => {
    const next = new URLSearchParams(query);
    for (const [name, value] of Object.entries(changes))
      value === undefined ? next.delete(name) : next.set(name, value);
    const text = next.toString();
    return `/console${text ? `?${text}` : ""}`;
  };

  const statusFilter = h(
    "select",
    {
      id: "status-filter",
      onchange: (event) => {
        const value = (event.target as HTMLSelectElement).value;
        navigate(withQuery({ status: value || undefined, after: undefined }));
      },
    },
    h("option", { value: "" }, "All"),
    statuses.map((s) => h("option", { value: s, selected: s === status }, s)),
  );
  const orderId = h("input", {
    id: "order-id",
    name: "order_id",
    type: "text",
    inputmode: "numeric",
    pattern: "[0-9]+",
    required: true,
    autocomplete: "off",
  });
  const goTo = h(
    "form",
    {
      class: "inline",
      onsubmit: (event) => {
        event.preventDefault();
        const id = orderId.value.trim();
        if (/^[0-9]+$/.test(id)) navigate(`/console/orders/${id}`);
      },
    },
    h("label", { for: "order-id" }, "Order id"),
    orderId,
    h("button", { type: "submit" }, "Go to order"),
  );

  return [
    h("h1", {}, "Orders"),
    h(
      "div",
      { class: "toolbar" },
      h("div", { class: "inline" }, h("label", { for: "status-filter" }, "Status"), statusFilter),
      goTo,
    ),
    h(
      "p",
      { class: "muted" },
      `${page.total} order${page.total === 1 ? "" : "s"}${isStatus(status) ? ` ${status}` : ""}`,
    ),
    page.items.length
      ? table(
          ["Order", "Status", "Amount", "Lines", "Created"],
          page.items.map((order) => [
            link(`/console/orders/${order.order_id}`, `Order ${order.order_id}`),
            badge(order.status),
            money(order.amount, order.currency),
            String(order.items.length),
            time(order.created_at),
          ]),
        )
      : empty("No orders here."),
    h(
      "nav",
      { class: "pager", "aria-label": "Pages" },
      after ? link(withQuery({ after: undefined }), "First page") : null,
      page.next_after ? link(withQuery({ after: String(page.next_after) }), "Next page") : null,
    ),
  ];
}

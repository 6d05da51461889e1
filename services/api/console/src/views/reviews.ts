import { h } from "../dom";
import { badge, money, time } from "../format";
import { answerOf, api } from "../services";
import { empty, link, navigate, reportingIn } from "../ui";

type Review = {
  id: number;
  order_id: number;
  notification_id: string;
  event: string;
  reason: string;
  amount: number;
  currency: string;
  created_at: string;
  status: "open" | "resolved";
  resolution: "applied" | "dismissed" | null;
  note: string | null;
  resolved_at: string | null;
  expected_amount?: number | null;
  expected_currency?: string | null;
};

/** Reviews whose amount differs from the order's: applying one accepts the difference (V2). */
const amountReasons = ["mismatch", "partial_refund"];

/**
 * V6: reviews whose "Apply" can move nothing, and why, said where "Apply" would be. A second
 * payment finds its order paid; a payment for no order has nothing to move.
 */
const noApply: Record<string, string> = {
  duplicate_payment:
    "“Apply” is not offered: this is a second payment for an order that is already paid, so there is nothing to apply. Dismiss it with a note, and refund the second payment with the payment provider if the customer was charged twice.",
  unknown_order:
    "“Apply” is not offered: the payment names no order of this shop, so there is nothing to move. Dismiss it with a note once the payment is refunded or matched by hand.",
};

/** U3: payment reviews, open ones first; "Apply" or "Dismiss" each with a "Note". */
export async function reviewsView(query: URLSearchParams) {
  const status = query.get("status") === "resolved" ? "resolved" : "open";
  const pageNumber = Number(query.get("page")) || 1;
  const page = await answerOf(
    api().api["payment-reviews"].get({ query: { status, page: pageNumber, per_page: 20 } }),
    "Listing payment reviews",
  );
  const pageLink = (n: number, label: string) =>
    link(`/console/reviews?status=${status}&page=${n}`, label);
  return [
    h("h1", {}, "Payment reviews"),
    h(
      "nav",
      { class: "tabs", "aria-label": "Review status" },
      tab("/console/reviews", "Open", status === "open"),
      tab("/console/reviews?status=resolved", "Resolved", status === "resolved"),
    ),
    h("p", { class: "muted" }, `${page.total} ${status} review${page.total === 1 ? "" : "s"}`),
    page.items.length
      ? h(
          "div",
          { class: "cards" },
          page.items.map((review) => reviewCard(review as Review)),
        )
      : empty(status === "open" ? "No review is waiting for a person." : "No resolved review."),
    h(
      "nav",
      { class: "pager", "aria-label": "Pages" },
      pageNumber > 1 ? pageLink(pageNumber - 1, "Previous page") : null,
      pageNumber < page.pages ? pageLink(pageNumber + 1, "Next page") : null,
    ),
  ];
}

/** U3: one review, as the order's timeline links to it, to resolve it without paging the list. */
export async function reviewView(id: number) {
  const review = await answerOf(
    api().api["payment-reviews"]({ id }).get(),
    "Reading the payment review",
  );
  return [
    h("p", { class: "crumbs" }, link("/console/reviews", "Payment reviews")),
    reviewCard(review as Review, "h1"),
  ];
}

/** A link to one list of reviews; the one shown is marked as the current page. */
function tab(href: string, name: string, current: boolean) {
  const a = link(href, name);
  if (current) a.setAttribute("aria-current", "page");
  return a;
}

/** A review's card; its title is the page's heading when the review is the page. */
function reviewCard(review: Review, heading: "h1" | "h2" = "h2") {
  const expected =
    review.expected_amount === undefined || review.expected_amount === null
      ? "—"
      : money(review.expected_amount, review.expected_currency ?? review.currency);
  return h(
    "article",
    { class: "card", "aria-labelledby": `review-${review.id}` },
    h(
      heading,
      { id: `review-${review.id}` },
      `Review ${review.id}: `,
      review.reason.replaceAll("_", " "),
      " ",
      badge(review.status),
    ),
    h(
      "dl",
      { class: "facts" },
      [
        h("dt", {}, "Order"),
        h("dd", {}, link(`/console/orders/${review.order_id}`, `Order ${review.order_id}`)),
      ],
      [h("dt", {}, "Event"), h("dd", {}, review.event)],
      [h("dt", {}, "Expected"), h("dd", {}, expected)],
      [h("dt", {}, "Received"), h("dd", {}, money(review.amount, review.currency))],
      [h("dt", {}, "Notification"), h("dd", {}, h("code", {}, review.notification_id))],
      [h("dt", {}, "Opened"), h("dd", {}, time(review.created_at))],
      review.resolution
        ? [
            h("dt", {}, "Resolution"),
            h(
              "dd",
              {},
              badge(review.resolution),
              " ",
              time(review.resolved_at),
              " ",
              review.note ?? "",
            ),
          ]
        : null,
    ),
    review.status === "open" ? resolveForm(review) : null,
  );
}

function resolveForm(review: Review) {
  const noteId = `note-${review.id}`;
  const acceptId = `accept-${review.id}`;
  const note = h("textarea", {
    id: noteId,
    name: "note",
    rows: 2,
    maxlength: 1000,
    required: true,
  });
  const accept = amountReasons.includes(review.reason)
    ? h("input", { type: "checkbox", id: acceptId, name: "accept_amount" })
    : undefined;
  const messages = h("div", { class: "messages" });
  const resolve = (action: "apply" | "dismiss") => async () => {
    await answerOf(
      api()
        .api["payment-reviews"]({ id: review.id })
        .resolve.post({
          action,
          note: note.value.trim(),
          ...(action === "apply" && accept?.checked ? { accept_amount: true } : {}),
        }),
      action === "apply" ? "Apply" : "Dismiss",
    );
    // The same view again: the list without it, or this review now resolved.
    navigate(location.pathname + location.search);
  };
  const whyNoApply = noApply[review.reason];
  const button = (label: string, action: "apply" | "dismiss") =>
    h("button", { type: "submit", value: action, class: action === "apply" ? "" : "quiet" }, label);
  return h(
    "form",
    {
      class: "resolve",
      onsubmit: (event) => {
        event.preventDefault();
        const submitter = (event as SubmitEvent).submitter as HTMLButtonElement | null;
        const action = submitter?.value === "dismiss" ? "dismiss" : "apply";
        void reportingIn(messages, resolve(action));
      },
    },
    h("label", { for: noteId }, "Note"),
    note,
    accept
      ? h(
          "div",
          { class: "check" },
          accept,
          h("label", { for: acceptId }, "Accept the amount received"),
        )
      : null,
    whyNoApply ? h("p", { class: "notice" }, whyNoApply) : null,
    h(
      "div",
      { class: "actions" },
      whyNoApply ? null : button("Apply", "apply"),
      button("Dismiss", "dismiss"),
    ),
    messages,
  );
}

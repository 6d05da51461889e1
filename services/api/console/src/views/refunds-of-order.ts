import { h, show } from "../dom";
import { badge, money, time } from "../format";
import { answerOf, api, Problem } from "../services";
import { empty, navigate, reportingIn, table } from "../ui";

type Refund = {
  refund_id: number;
  amount: number;
  currency: string;
  status: string;
  provider: string;
  provider_refund_id: string | null;
  failure_reason: string | null;
  requested_at: string;
  settled_at: string | null;
  actor: string;
};

/** What a refund's status means, in the console's words (F5). */
const statusWords: Record<string, string> = {
  requested: "Asked for; the payments service is asking the provider",
  pending: "The provider took it and has not said it is done",
  succeeded: "The provider made it: the money went back",
  failed: "Not made",
};

/** F5: why a refund could not be asked for, in words, from the problem's `code` (V6). */
const refusals: Record<string, string> = {
  not_refundable: "Only a paid order can be refunded.",
  amount_over_left: "That is more than is left to refund.",
  refund_elsewhere: "The payment's provider takes no refunds from the shop.",
};

/** How often a refund still moving is read again while its order's page is open. */
const followEveryMs = 2000;

function refundRows(refunds: Refund[]) {
  return table(
    ["Refund", "Amount", "Status", "Provider", "Provider's id", "Asked", "Settled", "By"],
    refunds.map((refund) => [
      String(refund.refund_id),
      money(refund.amount, refund.currency),
      h(
        "span",
        {},
        badge(refund.status),
        h("span", { class: "muted" }, ` ${statusWords[refund.status] ?? ""}`),
        refund.failure_reason
          ? h("p", { class: "notice", role: "note" }, `Why: ${refund.failure_reason}`)
          : null,
      ),
      refund.provider,
      refund.provider_refund_id ?? "—",
      time(refund.requested_at),
      time(refund.settled_at),
      refund.actor,
    ]),
    "Refunds asked for through the payment's provider",
  );
}

/**
 * F5: the order's refunds, each with its status as it moves (read again while one is still
 * requested or pending), and, for a paid order, "Refund" through the payment's provider: an
 * amount (default all that is left) and a required note. A refusal is said in words.
 */
export async function refundsOfOrder(
  place: Element,
  order: { order_id: number; status: string; amount: number; currency: string },
  /** The provider of the payment that paid it; only Stripe's and Adyen's refund from here. */
  provider: string | undefined,
) {
  const orderId = order.order_id;
  const read = async () =>
    (
      await answerOf(
        api().api.orders({ order_id: orderId }).refunds.get(),
        "Listing the order's refunds",
      )
    ).items as Refund[];
  const list = h("div", {});
  const answer = await answerOf(
    api().api.orders({ order_id: orderId }).refunds.get(),
    "Listing the order's refunds",
  );
  const refunds = answer.items as Refund[];
  // F5: only a provider payments refunds through gets "Refund" (null: payments has not said).
  const configured =
    answer.refunds_through === null || answer.refunds_through.includes(provider ?? "");
  const fill = (items: Refund[]) =>
    show(
      list,
      items.length ? refundRows(items) : empty("No refund was asked for through a provider."),
    );
  fill(refunds);
  const moving = (items: Refund[]) =>
    items.some((r) => r.status === "requested" || r.status === "pending");
  if (moving(refunds)) {
    const follow = setInterval(() => {
      if (!list.isConnected) return clearInterval(follow);
      void read()
        .then((items) => {
          fill(items);
          if (!moving(items)) clearInterval(follow);
        })
        .catch(() => clearInterval(follow));
    }, followEveryMs);
  }
  const asked = refunds.filter((r) => r.status !== "failed").reduce((sum, r) => sum + r.amount, 0);
  const left = order.amount - asked;
  show(
    place,
    list,
    order.status !== "paid"
      ? null
      : provider !== "stripe" && provider !== "adyen"
        ? empty(
            "This payment did not come through Stripe or Adyen: refund it where it was made, then use “Record a refund made elsewhere”.",
          )
        : !configured
          ? empty(
              `The payments service is not configured to refund through ${provider === "stripe" ? "Stripe (STRIPE_API_KEY)" : "Adyen (ADYEN_API_KEY)"}: refund it in the provider's dashboard, then use “Record a refund made elsewhere”.`,
            )
          : left > 0
            ? refundForm(orderId, left, order.currency)
            : empty("Refunds of the whole amount were asked for."),
  );
}

function refundForm(orderId: number, left: number, currency: string) {
  const messages = h("div", { class: "messages" });
  const amount = h("input", {
    id: "refund-amount",
    name: "amount",
    type: "number",
    min: 1,
    max: left,
    step: 1,
    required: true,
    value: left,
    inputmode: "numeric",
  });
  const note = h("textarea", {
    id: "refund-note",
    name: "note",
    rows: 2,
    maxlength: 1000,
    required: true,
  });
  const submit = h("button", { type: "submit", class: "danger" }, "Refund");
  const form = h(
    "form",
    {
      class: "resolve",
      onsubmit: (event) => {
        event.preventDefault();
        submit.disabled = true;
        void reportingIn(messages, async () => {
          try {
            await answerOf(
              api()
                .api.orders({ order_id: orderId })
                .refunds.post({ amount: Number(amount.value), note: note.value.trim() }),
              "Refund",
            );
          } catch (error) {
            if (error instanceof Problem && error.code && refusals[error.code])
              throw new Problem(
                error.title,
                `${refusals[error.code]} ${error.detail}`,
                error.status,
                error.code,
              );
            throw error;
          }
          navigate(`/console/orders/${orderId}`);
        }).finally(() => {
          submit.disabled = false;
        });
      },
    },
    h(
      "p",
      { class: "question" },
      `Refund through the payment's provider: the money goes back to the customer. ${money(left, currency)} is left to refund. Say why in the note; it is kept on the timeline with your name.`,
    ),
    h("label", { for: "refund-amount" }, `Amount (minor units of ${currency})`),
    amount,
    h("label", { for: "refund-note" }, "Note"),
    note,
    h("div", { class: "actions" }, submit),
  );
  return [form, messages];
}

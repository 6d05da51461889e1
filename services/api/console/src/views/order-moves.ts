import { h } from "../dom";
import { answerOf, api } from "../services";
import { empty, link, navigate, notedAction } from "../ui";

type Move = { label: string; status: "paid" | "cancelled" | "refunded"; says: string };

/** The moves an admin may make from each status (L1), with the names U3 gives them. */
const movesFrom: Record<string, Move[]> = {
  created: [
    { label: "Mark paid", status: "paid", says: "becomes paid" },
    { label: "Cancel order", status: "cancelled", says: "is cancelled" },
  ],
  paid: [
    {
      label: "Record a refund made elsewhere",
      status: "refunded",
      // V6: the move records a refund made elsewhere; no money goes back through it.
      says: "is recorded as refunded. No money is sent back: this records a refund you made with the payment provider",
    },
  ],
};

/**
 * U3, V5, V6: the moves the order's status allows, each asking for a "Note" before "Confirm".
 * "Mark paid" is not offered while a review is open: the review is where that is decided.
 */
export function orderMoves(order: { order_id: number; status: string }, openReviews: number[]) {
  const orderId = order.order_id;
  const moves = (movesFrom[order.status] ?? []).filter(
    (move) => !(move.status === "paid" && openReviews.length),
  );
  return h(
    "section",
    { "aria-labelledby": "moves" },
    h("h2", { id: "moves" }, "Actions"),
    openReviews.length
      ? h(
          "p",
          { class: "notice" },
          "Not offered: “Mark paid”, while a payment review of this order is open. Resolve it instead: ",
          openReviews.map((id, i) => [
            i ? ", " : null,
            link(`/console/reviews/${id}`, `Review ${id}`),
          ]),
          ".",
        )
      : null,
    moves.length
      ? h(
          "div",
          { class: "actions" },
          moves.map((move) =>
            notedAction(
              move.label,
              `${move.label}: order ${orderId} ${move.says}. Say why in the note; it is kept on the timeline with your name.`,
              async (note) => {
                await answerOf(
                  api().api.orders({ order_id: orderId }).patch({ status: move.status, note }),
                  move.label,
                );
                navigate(`/console/orders/${orderId}`);
              },
              `note-${move.status}`,
            ),
          ),
        )
      : openReviews.length
        ? null
        : empty(`A ${order.status} order allows no move.`),
  );
}

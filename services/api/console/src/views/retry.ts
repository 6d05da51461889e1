import { h, show } from "../dom";
import { answerOf, api } from "../services";
import { reportingIn } from "../ui";

type Attempt = { outcome?: string; status_code?: number | null; error?: string | null };
type Retried = { status?: string; attempts?: number; attempt?: Attempt };

/** What a manual attempt came to, in words: its outcome, status code or error. */
function outcomeOf(retried: Retried): string {
  const attempt = retried.attempt;
  if (!attempt) return "Retry queued: it is attempted now.";
  const answer =
    attempt.status_code !== null && attempt.status_code !== undefined
      ? `the receiver answered ${attempt.status_code}`
      : attempt.error
        ? `no answer (${attempt.error})`
        : "no answer";
  return `${attempt.outcome === "succeeded" ? "Delivered" : "Failed again"}: ${answer}. The delivery is now ${retried.status ?? "unchanged"}.`;
}

/**
 * H4, U7: "Retry" attempts the delivery now and shows that attempt's outcome beside it; `done`
 * then refreshes what the card shows (status, attempts, last status code).
 */
export function retryButton(endpointId: number, deliveryId: number, done?: () => void) {
  const outcome = h("div", { class: "messages", role: "status" });
  const button = h(
    "button",
    {
      type: "button",
      onclick: () => {
        button.disabled = true;
        void reportingIn(outcome, async () => {
          const retried = (await answerOf(
            api()
              .api["webhook-endpoints"]({ id: endpointId })
              .deliveries({ delivery_id: deliveryId })
              .retry.post(),
            "Retry",
          )) as Retried;
          done?.();
          show(outcome, outcomeOf(retried));
        }).finally(() => {
          button.disabled = false;
        });
      },
    },
    "Retry",
  );
  return h("div", { class: "retry" }, button, outcome);
}

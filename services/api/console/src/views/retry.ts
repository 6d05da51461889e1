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
 * then refreshes what the card shows (status, attempts, last status code). A delivery that
 * already succeeded is sent again only after "Send again": the receiver gets the event twice.
 */
export function retryButton(
  endpointId: number,
  deliveryId: number,
  { delivered = false, done }: { delivered?: boolean; done?: () => void } = {},
) {
  const outcome = h("div", { class: "messages", role: "status" });
  const place = h("div", { class: "retry" });
  const retry = (pressed: HTMLButtonElement) => {
    pressed.disabled = true;
    void reportingIn(outcome, async () => {
      const retried = (await answerOf(
        api()
          .api["webhook-endpoints"]({ id: endpointId })
          .deliveries({ delivery_id: deliveryId })
          .retry.post(),
        "Retry",
      )) as Retried;
      delivered = retried.status === "succeeded";
      done?.();
      ready(false);
      show(outcome, outcomeOf(retried));
    }).finally(() => {
      pressed.disabled = false;
    });
  };
  const ask = () => {
    const again = h("button", { type: "button", class: "danger" }, "Send again");
    again.addEventListener("click", () => retry(again));
    const back = h(
      "button",
      { type: "button", class: "quiet", onclick: () => ready(true) },
      "Back",
    );
    show(
      place,
      h(
        "span",
        { class: "question" },
        "Delivered already: the receiver gets this event a second time.",
      ),
      " ",
      again,
      " ",
      back,
      outcome,
    );
    again.focus();
  };
  const ready = (focus: boolean) => {
    const button = h("button", { type: "button" }, "Retry");
    button.addEventListener("click", () => (delivered ? ask() : retry(button)));
    show(place, button, outcome);
    if (focus) button.focus();
  };
  ready(false);
  return place;
}

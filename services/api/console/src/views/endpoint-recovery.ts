import { h, show } from "../dom";
import { answerOf } from "../services";
import { reportingIn } from "../ui";
import { endpoints } from "./webhooks";

/** H3: how far back replay-missing and recover reach. */
const maxDaysBack = 30;

/** A `datetime-local` value (the viewer's zone, to the minute) for a moment. */
const localValue = (at: Date) =>
  new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);

type Kind = "replay-missing" | "recover";

const wording: Record<Kind, { button: string; field: string; explains: string }> = {
  "replay-missing": {
    button: "Replay missing",
    field: "Replay events since",
    explains:
      "Makes a delivery, in event order, for every event since then that this endpoint subscribes to and never had a delivery for — the events of a time it was disabled. Calling it twice queues nothing new.",
  },
  recover: {
    button: "Recover",
    field: "Recover failed deliveries since",
    explains:
      "Attempts again every delivery since then that finally failed, with the same webhook-id (receivers de-duplicate on it). Calling it twice queues nothing new.",
  },
};

/**
 * H3, U7: "Replay missing" or "Recover" since a date (labelled), and how many were queued. The
 * date offered is `from` when given (H3 v5: the moment the endpoint was disabled), else a day back.
 */
function recoveryForm(id: number, kind: Kind, from?: Date) {
  const words = wording[kind];
  const fieldId = `${kind}-since`;
  const now = new Date();
  const oldest = new Date(now.getTime() - maxDaysBack * 24 * 3600_000);
  const offered =
    from && from > oldest && from <= now ? from : new Date(now.getTime() - 24 * 3600_000);
  // To the minute, rounded down, so the moment itself is included.
  const since = h("input", {
    id: fieldId,
    name: "since",
    type: "datetime-local",
    required: true,
    value: localValue(offered),
    min: localValue(oldest),
    max: localValue(now),
  });
  // V5: an optional note, kept with the admin's name on the audit log.
  const noteId = `${kind}-note`;
  const note = h("textarea", { id: noteId, name: "note", rows: 2, maxlength: 1000 });
  const outcome = h("div", { class: "messages", role: "status" });
  return h(
    "form",
    {
      class: "resolve",
      "aria-label": words.button,
      onsubmit: (event) => {
        event.preventDefault();
        void reportingIn(outcome, async () => {
          const why = note.value.trim();
          const body = {
            since: new Date(since.value).toISOString(),
            ...(why ? { note: why } : {}),
          };
          const endpoint = endpoints()({ id });
          const { queued } = await answerOf(
            kind === "recover"
              ? endpoint.recover.post(body)
              : endpoint["replay-missing"].post(body),
            words.button,
          );
          show(
            outcome,
            queued
              ? `${queued} deliver${queued === 1 ? "y" : "ies"} queued; they appear below as they are attempted.`
              : "Nothing to queue: every event since then has its delivery already.",
          );
        });
      },
    },
    h("p", { class: "muted" }, words.explains),
    h("label", { for: fieldId }, words.field),
    since,
    h("label", { for: noteId }, "Note (optional)"),
    note,
    h("div", { class: "actions" }, h("button", { type: "submit" }, words.button)),
    outcome,
  );
}

/**
 * H3: the endpoint page's repair section: what was missed or finally failed, sent again.
 * `disabledAt` (H3 v5): when the endpoint was last disabled, offered as replay-missing's date.
 */
export function recoverySection(id: number, disabledAt: string | null) {
  const from = disabledAt ? new Date(disabledAt) : undefined;
  return h(
    "section",
    { "aria-labelledby": "recovery" },
    h("h2", { id: "recovery" }, "Missed and failed events"),
    h(
      "div",
      { class: "cards" },
      recoveryForm(id, "replay-missing", from),
      recoveryForm(id, "recover"),
    ),
  );
}

import { h } from "../dom";
import { badge, time } from "../format";
import { link } from "../ui";

export type TimelineEntry = {
  seq: number;
  type: string;
  at: string;
  source: string;
  notification_id: string | null;
  actor?: string | null;
  detail: Record<string, unknown>;
};

/** How a timeline detail's key reads; others read as themselves, `_` as a space. */
const detailLabels: Record<string, string> = { review_id: "review", payment_ref: "payment ref" };

/**
 * U3, U7 "Who did this, and why?": each entry with its source and notification, and for a
 * person's move (V5) who made it and the note they wrote.
 */
export function timelineList(entries: TimelineEntry[]) {
  return h(
    "ol",
    { class: "timeline" },
    entries.map((entry) => {
      const { note, ...rest } = entry.detail;
      return h(
        "li",
        {},
        h("div", { class: "when" }, time(entry.at)),
        h(
          "div",
          {},
          badge(entry.type),
          " ",
          h("span", { class: "source" }, `source: ${entry.source}`),
          entry.actor ? h("div", { class: "actor" }, "by ", h("strong", {}, entry.actor)) : null,
          typeof note === "string" && note
            ? h("blockquote", { class: "note" }, h("span", { class: "label" }, "Note: "), note)
            : null,
          entry.notification_id
            ? h("div", {}, "notification ", h("code", {}, entry.notification_id))
            : null,
          detailList(rest),
        ),
      );
    }),
  );
}

/** Reviews the timeline opened and no entry resolved yet: the order's open reviews (V6). */
export function openReviewsOf(entries: TimelineEntry[]): number[] {
  const reviewOf = (entry: TimelineEntry) =>
    typeof entry.detail.review_id === "number" ? entry.detail.review_id : undefined;
  const resolved = new Set(entries.filter((e) => e.type === "review_resolved").map(reviewOf));
  return entries
    .filter((e) => e.type === "review_opened")
    .map(reviewOf)
    .filter((id): id is number => id !== undefined && !resolved.has(id));
}

/**
 * A timeline detail (T1: `{"reason": "mismatch", "review_id": 7}`) as a small list of its keys
 * and values, so "why is this order not paid?" reads at a glance; the review it opened is a link
 * to it, a nested value is one line of text.
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

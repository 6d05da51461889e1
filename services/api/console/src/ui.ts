import { type Child, h, show } from "./dom";
import { Problem, SignedOut } from "./services";

let navigateTo: (path: string) => void = (path) => location.assign(path);

/** Set by main: how a link moves within the console without reloading the page. */
export function setNavigator(navigate: (path: string) => void): void {
  navigateTo = navigate;
}

export const navigate = (path: string) => navigateTo(path);

/** A link inside the console: a real `<a href>`, followed in place (a modified click opens a tab). */
export function link(href: string, ...children: Child[]) {
  return h(
    "a",
    {
      href,
      onclick: (event) => {
        const click = event as MouseEvent;
        if (click.ctrlKey || click.metaKey || click.shiftKey || click.button !== 0) return;
        event.preventDefault();
        navigate(href);
      },
    },
    ...children,
  );
}

/**
 * U7, V6: refusals the console can say in its own words (the names on its screen, never a JSON
 * field); any other problem shows its title and detail as the service wrote them (U4).
 */
const inOurWords: Record<string, string> = {
  amount_not_accepted:
    "The amount received differs from what the order expects. Tick “Accept the amount received” to apply it anyway, or dismiss the review.",
  open_review:
    "This order has an open payment review: resolve the review (Payment reviews) instead of marking the order paid.",
  review_resolved: "This review is already resolved; the page shows it as it is now.",
};

/** U4: where an action or a read failed, its problem's title and detail. */
export function problemBox(error: unknown) {
  const problem =
    error instanceof Problem ? error : new Problem("Unexpected error", String(error ?? ""));
  const words = problem.code ? inOurWords[problem.code] : undefined;
  return h(
    "div",
    { class: "problem", role: "alert" },
    h("strong", {}, problem.title),
    h("span", {}, ` ${words ?? problem.detail}`),
  );
}

/** Runs `work`, showing its problem in `place`; a sign-out has already moved the page. */
export async function reportingIn(place: Element, work: () => Promise<void>): Promise<void> {
  show(place);
  try {
    await work();
  } catch (error) {
    if (error instanceof SignedOut) return;
    show(place, problemBox(error));
  }
}

/**
 * A button that asks "Confirm" before it acts (U3): the first press shows the question beside
 * it, "Confirm" runs `act`, "Back" puts the button back. Errors appear under it (U4).
 */
export function confirmedAction(label: string, question: string, act: () => Promise<void>) {
  const place = h("div", { class: "action" });
  const messages = h("div", { class: "messages" });
  const start = () => {
    const confirm = h("button", { type: "button", class: "danger" }, "Confirm");
    const back = h("button", { type: "button", class: "quiet" }, "Back");
    confirm.addEventListener("click", () => {
      confirm.disabled = true;
      void reportingIn(messages, act).finally(() => {
        confirm.disabled = false;
      });
    });
    back.addEventListener("click", () => {
      show(messages);
      reset();
    });
    show(place, h("span", { class: "question" }, question), " ", confirm, " ", back, messages);
    confirm.focus();
  };
  const reset = () => {
    const button = h("button", { type: "button", onclick: start }, label);
    show(place, button, messages);
    button.focus();
  };
  show(place, h("button", { type: "button", onclick: start }, label), messages);
  return place;
}

/**
 * V5: a move that asks why before it acts: the first press shows a required "Note" with
 * "Confirm" and "Back"; "Confirm" runs `act` with the note. Errors appear under it (U4).
 */
export function notedAction(
  label: string,
  question: Child,
  act: (note: string) => Promise<void>,
  id: string,
) {
  const place = h("div", { class: "action" });
  const messages = h("div", { class: "messages" });
  const start = () => {
    const note = h("textarea", { id, name: "note", rows: 2, maxlength: 1000, required: true });
    const confirm = h("button", { type: "submit", class: "danger" }, "Confirm");
    const back = h("button", { type: "button", class: "quiet", onclick: () => reset() }, "Back");
    const form = h(
      "form",
      {
        class: "resolve",
        onsubmit: (event) => {
          event.preventDefault();
          confirm.disabled = true;
          void reportingIn(messages, () => act(note.value.trim())).finally(() => {
            confirm.disabled = false;
          });
        },
      },
      h("p", { class: "question" }, question),
      h("label", { for: id }, "Note"),
      note,
      h("div", { class: "actions" }, confirm, back),
    );
    show(place, form, messages);
    note.focus();
  };
  const reset = () => {
    const button = h("button", { type: "button", onclick: start }, label);
    show(place, button);
    show(messages);
    place.append(messages);
    button.focus();
  };
  show(place, h("button", { type: "button", onclick: start }, label), messages);
  return place;
}

/** A table that reads as cards on a phone: each cell carries its column's name. */
export function table(headings: string[], rows: Child[][], caption?: string) {
  return h(
    "table",
    {},
    caption ? h("caption", {}, caption) : null,
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        headings.map((heading) => h("th", { scope: "col" }, heading)),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((cells) =>
        h(
          "tr",
          {},
          cells.map((cell, i) => h("td", { "data-label": headings[i] }, cell)),
        ),
      ),
    ),
  );
}

/** Raw JSON as received, pretty-printed when it parses. */
export function rawBody(raw: string) {
  let text = raw;
  try {
    text = JSON.stringify(JSON.parse(raw), null, 2);
  } catch {}
  return h("pre", { class: "raw" }, text);
}

export const empty = (text: string) => h("p", { class: "muted" }, text);

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

/** U4: where an action or a read failed, its problem's title and detail. */
export function problemBox(error: unknown) {
  const problem =
    error instanceof Problem ? error : new Problem("Unexpected error", String(error ?? ""));
  return h(
    "div",
    { class: "problem", role: "alert" },
    h("strong", {}, problem.title),
    problem.detail ? h("span", {}, ` ${problem.detail}`) : null,
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

/** A child of `h`: text, a node, or nothing (null, undefined, false are skipped); arrays flatten. */
export type Child = Node | string | number | null | undefined | false | Child[];

type Attribute = string | number | boolean | null | undefined;
type Props = Record<string, Attribute | ((event: Event) => void)>;

/**
 * `h("button", { type: "button", onclick: run }, "Apply")`: an element with its attributes,
 * listeners (`on...`) and children. Text is always set as text, never parsed as HTML.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (value === true) element.setAttribute(name, "");
    else if (value !== false && value !== null && value !== undefined)
      element.setAttribute(name, String(value));
  }
  element.append(...flatten(children));
  return element;
}

function flatten(children: Child[]): (Node | string)[] {
  return children.flatMap((child) =>
    Array.isArray(child)
      ? flatten(child)
      : child === null || child === undefined || child === false
        ? []
        : [typeof child === "number" ? String(child) : child],
  );
}

/** Replaces what `parent` shows. */
export function show(parent: Element, ...children: Child[]): void {
  parent.replaceChildren(...flatten(children));
}

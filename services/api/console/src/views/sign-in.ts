import { h } from "../dom";

/** U2: the sign-in form; `message` says why the viewer is here (expired, not an admin, ...). */
export function signInView(message: string | undefined, signIn: (token: string) => void) {
  const token = h("textarea", {
    id: "token",
    name: "token",
    rows: 4,
    required: true,
    autocomplete: "off",
    spellcheck: "false",
  });
  return h(
    "div",
    { class: "sign-in" },
    h("h1", {}, "Operator console"),
    h(
      "p",
      {},
      "Sign in with an admin bearer token (",
      h("code", {}, "npm run token -- --sub you --admin"),
      "). It is kept in this tab only and forgotten when the tab closes.",
    ),
    message ? h("div", { class: "problem", role: "alert" }, message) : null,
    h(
      "form",
      {
        onsubmit: (event) => {
          event.preventDefault();
          signIn(token.value.trim());
        },
      },
      h("label", { for: "token" }, "Token"),
      token,
      h("button", { type: "submit" }, "Sign in"),
    ),
  );
}

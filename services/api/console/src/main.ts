import { type Child, h, show } from "./dom";
import { answerOf, api, type Problem, SignedOut, whenUnauthorized } from "./services";
import { refusalOf, session, subjectOf, takeCodeFromAddress } from "./session";
import { empty, link, problemBox, setNavigator } from "./ui";
import { auditView } from "./views/audit";
import { endpointView } from "./views/endpoint";
import { keepHealthFresh } from "./views/health";
import { notificationsView } from "./views/notifications";
import { orderView } from "./views/order";
import { ordersView } from "./views/orders";
import { reconciliationView } from "./views/reconciliation";
import { refusalsView } from "./views/refusals";
import { reviewsView, reviewView } from "./views/reviews";
import { setAsideView } from "./views/set-aside";
import { signInView } from "./views/sign-in";
import { webhooksView } from "./views/webhooks";

const root = document.getElementById("app") as HTMLElement;

type View = (query: URLSearchParams) => Promise<Child>;

/** Each address of the console and its view; everything else under /console is "not found". */
function viewFor(path: string): View | undefined {
  const order = path.match(/^\/console\/orders\/([0-9]{1,15})$/);
  if (order) return () => orderView(Number(order[1]));
  const review = path.match(/^\/console\/reviews\/([0-9]{1,15})$/);
  if (review) return () => reviewView(Number(review[1]));
  const endpoint = path.match(/^\/console\/webhooks\/([0-9]{1,15})$/);
  if (endpoint) return (query) => endpointView(Number(endpoint[1]), query);
  return (
    {
      "/console": ordersView,
      "/console/": ordersView,
      "/console/orders": ordersView,
      "/console/reviews": reviewsView,
      "/console/notifications": notificationsView,
      "/console/webhooks": webhooksView,
      "/console/refusals": refusalsView,
      "/console/reconciliation": reconciliationView,
      "/console/audit": auditView,
      "/console/outbox": setAsideView,
    } as Record<string, View>
  )[path];
}

const sections = [
  ["/console", "Orders"],
  ["/console/reviews", "Payment reviews"],
  ["/console/notifications", "Notifications"],
  ["/console/webhooks", "Webhooks"],
  ["/console/refusals", "Refusals"],
  ["/console/reconciliation", "Reconciliation"],
  ["/console/audit", "Audit"],
] as const;

function showSignIn(message?: string) {
  document.title = "Sign in · Operator console";
  show(root, h("main", { id: "main" }, signInView(message, signIn)));
  root.querySelector<HTMLElement>("#token")?.focus();
}

function signOut(message?: string) {
  session.forget();
  history.replaceState(null, "", "/console");
  showSignIn(message);
}

/** U2: the token's own claims first (expired, not an admin), then the services decide. */
async function signIn(token: string) {
  const refusal = refusalOf(token);
  if (refusal) return showSignIn(refusal);
  session.keep(token);
  try {
    await answerOf(
      api().api["payment-reviews"].get({ query: { per_page: 1 } }),
      "Checking the token",
    );
  } catch (error) {
    if (error instanceof SignedOut) return;
    session.forget();
    const problem = error as Problem;
    return showSignIn(
      problem.status === 403
        ? "This token is not an admin's. The console needs an admin token."
        : `${problem.title}: ${problem.detail}`,
    );
  }
  await render();
}

async function render() {
  const token = session.token();
  if (!token) return showSignIn();
  const refusal = refusalOf(token);
  if (refusal) return signOut(refusal);

  const path = location.pathname;
  const main = h("main", { id: "main", tabindex: -1 }, h("p", { class: "muted" }, "Loading…"));
  const health = h("div", { class: "health-line", "aria-label": "Health", role: "region" });
  const current = path.startsWith("/console/orders/")
    ? "/console"
    : path.startsWith("/console/webhooks/")
      ? "/console/webhooks"
      : path.startsWith("/console/reviews/")
        ? "/console/reviews"
        : path.replace(/\/$/, "");
  show(
    root,
    h("a", { href: "#main", class: "skip" }, "Skip to content"),
    h(
      "header",
      { class: "top" },
      h("span", { class: "brand" }, "Shop console"),
      h(
        "nav",
        { "aria-label": "Sections" },
        sections.map(([href, name]) => {
          const a = link(href, name);
          if (href === current) a.setAttribute("aria-current", "page");
          return a;
        }),
      ),
      h(
        "button",
        { type: "button", class: "sign-out", onclick: () => signOut("Signed out.") },
        "Sign out",
      ),
    ),
    health,
    main,
  );
  keepHealthFresh(health);
  const view = viewFor(path);
  try {
    show(
      main,
      view
        ? await view(new URLSearchParams(location.search))
        : [h("h1", {}, "Not found"), empty(`Nothing at ${path}.`)],
    );
  } catch (error) {
    if (error instanceof SignedOut) return;
    show(main, h("h1", {}, "Something went wrong"), problemBox(error));
  }
  document.title = `${main.querySelector("h1")?.textContent ?? "Console"} · Operator console`;
}

whenUnauthorized((message) =>
  signOut(`The services refused the token (${message}). Sign in with a valid admin token.`),
);
setNavigator((path) => {
  history.pushState(null, "", path);
  // Keyboard and screen-reader users land on the new view's heading, not at the page's top.
  void render().then(() => {
    const heading = root.querySelector<HTMLElement>("main h1");
    heading?.setAttribute("tabindex", "-1");
    heading?.focus();
  });
});
window.addEventListener("popstate", () => void render());

/** N16: the one-time code of the sign-in link, exchanged once for the token it stands for. */
async function signInWithCode(code: string) {
  try {
    const { token } = await answerOf(
      api().console.session.post({ code }),
      "Exchanging the sign-in code",
      { signOutOn401: false },
    );
    await signIn(token);
  } catch (error) {
    showSignIn(
      (error as Problem).status === 401
        ? "This sign-in link was used already or expired (it works once, within 10 minutes). Sign in with a token, or run npm start again for a new link."
        : `${(error as Problem).title}: ${(error as Problem).detail}`,
    );
  }
}

/**
 * N21: a sign-in link opened in a tab that is signed in already asks before it replaces that
 * session (a link can sign in as another admin; the actions then carry that admin's name). The
 * code is exchanged only if the operator says so; until then it stays unused.
 */
function askBeforeReplacing(code: string, current: string) {
  document.title = "Sign in with the link? · Operator console";
  const who = subjectOf(current);
  show(
    root,
    h(
      "main",
      { id: "main" },
      h("h1", {}, "Sign in with the link?"),
      h(
        "p",
        {},
        `This tab is signed in already${who ? ` as ${who}` : ""}. The link you opened signs in with its own code, possibly as another admin; what you do next is then done in that admin's name.`,
      ),
      h(
        "div",
        { class: "actions" },
        h(
          "button",
          { type: "button", onclick: () => void signInWithCode(code) },
          "Sign in with the link",
        ),
        h(
          "button",
          { type: "button", onclick: () => void render() },
          who ? `Stay signed in as ${who}` : "Stay signed in",
        ),
      ),
    ),
  );
  root.querySelector<HTMLElement>("main h1")?.setAttribute("tabindex", "-1");
  root.querySelector<HTMLElement>("main h1")?.focus();
}

const fromAddress = takeCodeFromAddress();
const signedInAlready = session.token();
if (fromAddress.code && signedInAlready && !refusalOf(signedInAlready))
  askBeforeReplacing(fromAddress.code, signedInAlready);
else if (fromAddress.code) void signInWithCode(fromAddress.code);
else if (fromAddress.token)
  showSignIn(
    "Links that carry a token are not accepted (N16): paste the token, or use a sign-in link.",
  );
else void render();

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import postgres from "postgres";
import { signToken, testDatabaseUrl, token, unique } from "../harness/basics";
import { byRole, click, fill, heading, phone, screenshot, sees } from "../harness/browser";
import { type ConsoleTestbed, openConsole } from "./support";

/**
 * U1, U2 in a real headless Chromium against both services as processes (U6): the console as
 * the api serves it, payments' CORS, and signing in and out. Elements are found as a person
 * reads the screen: by role and accessible name.
 */

// A browser test waits on a real Chromium and two services on two shared cores.
setDefaultTimeout(60_000);

let con: ConsoleTestbed;

beforeAll(async () => {
  con = await openConsole();
}, 60_000);

afterAll(async () => {
  await con?.close();
});

describe("U1 the console is served by the api", () => {
  test("U1 /console and its assets come from the api with a strict Content-Security-Policy", async () => {
    for (const path of ["/console", "/console/orders/1", "/console/assets/console.js"]) {
      const response = await fetch(`${con.stack.api.url}${path}`);
      expect(response.status).toBe(200);
      const policy = response.headers.get("content-security-policy") ?? "";
      expect(policy).toContain("script-src 'self'");
      expect(policy).toContain("style-src 'self'");
      expect(policy).toContain(`connect-src 'self' ${con.stack.payments.url}`);
      expect(policy).not.toContain("unsafe-inline");
      expect(policy).not.toContain("unsafe-eval");
      await response.arrayBuffer();
    }
    const page = await (await fetch(`${con.stack.api.url}/console`)).text();
    expect(page).toContain(`<meta name="payments-url" content="${con.stack.payments.url}" />`);
    expect(page).not.toMatch(/<script>|<style>|style=/);
    expect(page).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)/);
  });

  test("U1 payments answers CORS for the console's origin on its operator routes, never on the webhook", async () => {
    const preflight = (path: string, origin: string) =>
      fetch(`${con.stack.payments.url}${path}`, {
        method: "OPTIONS",
        headers: {
          origin,
          "access-control-request-method": path.includes("webhooks") ? "POST" : "GET",
          "access-control-request-headers": "authorization, content-type",
        },
      });
    const operator = await preflight("/api/notifications", con.stack.api.url);
    expect(operator.status).toBe(204);
    expect(operator.headers.get("access-control-allow-origin")).toBe(con.stack.api.url);
    expect(operator.headers.get("access-control-allow-headers")).toContain("authorization");

    // Every provider's webhook route (section 15), configured or not.
    for (const provider of ["payment", "stripe", "adyen"]) {
      const webhook = await preflight(`/api/webhooks/${provider}`, con.stack.api.url);
      expect(webhook.headers.get("access-control-allow-origin")).toBeNull();
    }
    const posted = await con.stack.notify(
      { event: "payment.failed", order_id: 1, amount: 1, currency: "USD", id: unique("evt") },
      { headers: { origin: con.stack.api.url } },
    );
    expect(posted.headers.get("access-control-allow-origin")).toBeNull();

    const elsewhere = await preflight("/api/notifications", "http://evil.example");
    expect(elsewhere.headers.get("access-control-allow-origin")).toBeNull();

    // A problem answer carries it too, so the console can read its title and detail (U4).
    const refused = await fetch(`${con.stack.payments.url}/api/notifications`, {
      headers: { origin: con.stack.api.url, authorization: `Bearer ${con.stack.customer}` },
    });
    expect(refused.status).toBe(403);
    expect(refused.headers.get("access-control-allow-origin")).toBe(con.stack.api.url);
  });
});

describe("U2 sign-in", () => {
  test("U2/N16 the sign-in link's one-time code signs in, clears the address bar and keeps the token in sessionStorage only", async () => {
    const page = await con.signedIn();
    expect(page.url()).toBe(`${con.stack.api.url}/console`);
    const kept = await page.evaluate(() => {
      const { sessionStorage, localStorage, document } = globalThis as any;
      return {
        session: sessionStorage.length,
        token: sessionStorage.getItem("console.token"),
        local: localStorage.length,
        cookie: document.cookie,
      };
    });
    expect(kept).toEqual({ session: 1, token: con.stack.admin, local: 0, cookie: "" });
    await con.accessible(page);
    await page.close();
  });

  test("U2 the form signs in with an admin token; Sign out forgets it", async () => {
    const page = await con.browser.newPage();
    await page.goto(`${con.stack.api.url}/console`);
    await heading(page, "Operator console");
    await con.accessible(page);
    await screenshot(page, "sign-in-desktop");
    // U5 at phone width too, with its screenshot.
    const phonePage = await con.browser.newPage(phone);
    await phonePage.goto(`${con.stack.api.url}/console`);
    await heading(phonePage, "Operator console");
    await con.accessible(phonePage);
    await screenshot(phonePage, "sign-in-phone");
    await phonePage.close();
    await fill(page, "textbox", "Token", con.stack.admin);
    await click(page, "button", "Sign in");
    await heading(page, "Orders");
    await click(page, "button", "Sign out");
    await byRole(page, "textbox", "Token");
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.length)).toBe(0);
    await page.close();
  });

  test("U2 a customer's token and an expired one return to sign-in saying so", async () => {
    const page = await con.browser.newPage();
    await page.goto(`${con.stack.api.url}/console`);
    await fill(page, "textbox", "Token", con.stack.customer);
    await click(page, "button", "Sign in");
    await sees(page, "not an admin");
    await byRole(page, "textbox", "Token");
    const expired = await token({
      sub: unique("admin"),
      scope: "admin",
      exp: Math.floor(Date.now() / 1000) - 60,
    });
    await fill(page, "textbox", "Token", expired);
    await click(page, "button", "Sign in");
    await sees(page, "expired");
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.length)).toBe(0);
    await page.close();
  });

  test("U4 a token the services refuse (401) returns to sign-in with their problem", async () => {
    const forged = await token(
      { sub: unique("admin"), scope: "admin" },
      "another-secret-of-at-least-32-characters",
    );
    const page = await con.browser.newPage();
    await page.goto(`${con.stack.api.url}/console`);
    await fill(page, "textbox", "Token", forged);
    await click(page, "button", "Sign in");
    await sees(page, "refused the token");
    await byRole(page, "textbox", "Token");
    await page.close();
  });
});

describe("N16 the sign-in link carries a one-time code", () => {
  const exchange = (code: string) =>
    fetch(`${con.stack.api.url}/console/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ code }),
    });

  test("N16 after signing in by the link, the browser's history holds nothing that signs in", async () => {
    const { code } = await con.signInCode();
    const link = `${con.stack.api.url}/console#code=${code}`;
    const page = await con.browser.newPage();
    await page.goto(link);
    await heading(page, "Orders");
    expect(await page.evaluate(() => (globalThis as any).location.href)).toBe(
      `${con.stack.api.url}/console`,
    );
    // Every address this tab's history holds: none carries the token or the code.
    const session = await page.createCDPSession();
    const { entries } = await session.send("Page.getNavigationHistory");
    await session.detach();
    expect(entries.length).toBeGreaterThan(0);
    for (const { url } of entries) {
      expect(url).not.toContain(con.stack.admin);
      expect(url).not.toContain(code);
    }
    // And the link itself, wherever else it was kept (a browser's History database, a terminal's
    // scrollback), signs no one in any more: its code was used.
    const again = await exchange(code);
    expect(again.status).toBe(401);
    expect(again.headers.get("content-type")).toContain("application/problem+json");
    await page.close();
  });

  test("N16 a code is exchanged once within 10 minutes; a second exchange, an unknown or expired code is 401 problem+json", async () => {
    const { code, expires_at } = await con.signInCode();
    expect(code.length).toBeGreaterThanOrEqual(40);
    const lifetime = Date.parse(expires_at) - Date.now();
    expect(lifetime).toBeGreaterThan(0);
    expect(lifetime).toBeLessThanOrEqual(10 * 60 * 1000);

    const first = await exchange(code);
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ token: con.stack.admin });
    const second = await exchange(code);
    expect(second.status).toBe(401);
    const problem = (await second.json()) as { title: string; detail: string };
    expect(problem.title).toBe("Unauthorized");
    expect(problem.detail).toContain("once");
    expect((await exchange("not-a-code")).status).toBe(401);

    // At rest: the code's hash, and the token sealed under the code: no row holds either.
    const sql = postgres(testDatabaseUrl, { max: 1, onnotice: () => {} });
    try {
      const waiting = await con.signInCode();
      const hash = new Bun.CryptoHasher("sha256").update(waiting.code).digest("hex");
      const rows = await sql`select code_hash, token from api.console_sign_in_codes`;
      expect(rows.map((row) => row.code_hash)).toContain(hash);
      const stored = JSON.stringify(rows);
      expect(stored).not.toContain(waiting.code);
      expect(stored).not.toContain(con.stack.admin);
      expect(stored).not.toContain(con.stack.admin.split(".")[1]);
      await sql`update api.console_sign_in_codes set expires_at = now() - interval '1 second'
        where code_hash = ${hash}`;
      expect((await exchange(waiting.code)).status).toBe(401);
      // The expired one is gone.
      const left = await sql`select count(*)::int as n from api.console_sign_in_codes
        where code_hash = ${hash}`;
      expect(left[0].n).toBe(0);
    } finally {
      await sql.end();
    }
  });

  test("N16 only an admin gets a code (401 without a token, 403 for a customer); bad bodies are 400", async () => {
    const ask = (bearer?: string) =>
      fetch(`${con.stack.api.url}/api/console/sign-in-codes`, {
        method: "POST",
        headers: bearer ? { authorization: `Bearer ${bearer}` } : {},
      });
    expect((await ask()).status).toBe(401);
    expect((await ask(con.stack.customer)).status).toBe(403);
    for (const body of ["{}", '{"code": 7}', "not json"]) {
      const answer = await fetch(`${con.stack.api.url}/console/session`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      expect(answer.status).toBe(400);
      expect(answer.headers.get("content-type")).toContain("application/problem+json");
    }
  });

  test("N16 a used link returns to sign-in saying so; a link with a token is not used", async () => {
    const { code } = await con.signInCode();
    expect((await exchange(code)).status).toBe(200);
    const page = await con.browser.newPage();
    await page.goto(`${con.stack.api.url}/console#code=${code}`);
    await sees(page, "used already or expired");
    await byRole(page, "textbox", "Token");
    await page.close();
    // An old link with the token itself: taken out of the address bar, and not used.
    const old = await con.browser.newPage();
    await old.goto(`${con.stack.api.url}/console#token=${con.stack.admin}`);
    await sees(old, "not accepted");
    expect(await old.evaluate(() => (globalThis as any).sessionStorage.length)).toBe(0);
    expect(old.url()).toBe(`${con.stack.api.url}/console`);
    await old.close();
  });
});

describe("N21 a sign-in link never silently replaces a session", () => {
  test("N21 (v5) a sign-in link opened in a tab signed in already asks before it replaces the session; staying keeps the code unused", async () => {
    const page = await con.signedIn();
    const otherSub = unique("other-admin");
    const otherAdmin = await signToken(otherSub, "admin");
    const codeOf = async (bearer: string) => {
      const answer = await fetch(`${con.stack.api.url}/api/console/sign-in-codes`, {
        method: "POST",
        headers: { authorization: `Bearer ${bearer}` },
      });
      expect(answer.status).toBe(201);
      return ((await answer.json()) as { code: string }).code;
    };
    const kept = () =>
      page.evaluate(() => (globalThis as any).sessionStorage.getItem("console.token"));
    // The link pasted into the signed-in tab (from another view, so the page loads it).
    const code = await codeOf(otherAdmin);
    await page.goto(`${con.stack.api.url}/console/webhooks`);
    await page.goto(`${con.stack.api.url}/console#code=${code}`);
    await heading(page, "Sign in with the link?");
    await sees(page, `signed in already as ${con.adminSub}`);
    expect(await kept()).toBe(con.stack.admin);
    expect(page.url()).toBe(`${con.stack.api.url}/console`);
    await con.accessible(page);
    await click(page, "button", `Stay signed in as ${con.adminSub}`);
    await heading(page, "Orders");
    expect(await kept()).toBe(con.stack.admin);

    // Asked again, the operator takes the link: the tab is now the other admin's.
    await page.goto(`${con.stack.api.url}/console/webhooks`);
    await page.goto(`${con.stack.api.url}/console#code=${code}`);
    await click(page, "button", "Sign in with the link");
    await heading(page, "Orders");
    expect(await kept()).toBe(otherAdmin);
    await page.close();
  });
});

test("U1 the browser asked no other host, and no script or style was refused", () => {
  con.stayedHome();
});

import { mkdirSync } from "node:fs";
import puppeteer, { type Browser, type ElementHandle, type Page } from "puppeteer-core";

/** Debian's chromium (`.ci/run` installs it); CHROMIUM_PATH points elsewhere. */
export const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

const axeSource = await Bun.file(
  new URL("../../node_modules/axe-core/axe.min.js", import.meta.url).pathname,
).text();

export const desktop = { width: 1280, height: 900 };
export const phone = { width: 390, height: 844, isMobile: true, hasTouch: true };

/**
 * A headless Chromium for the console's tests (U6). Every request any of its pages makes is
 * recorded; `outside` lists those that went to an origin other than `origins` (U1 says none).
 * Console errors (a refused script, a CSP report) are kept too.
 */
export async function openBrowser(origins: string[]) {
  const browser: Browser = await puppeteer.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
  });
  const outside: string[] = [];
  const consoleErrors: string[] = [];

  return {
    browser,
    outside,
    consoleErrors,

    /** A new page in its own browser context: its own sessionStorage, as a new tab would be. */
    async newPage(viewport = desktop): Promise<Page> {
      const context = await browser.createBrowserContext();
      const page = await context.newPage();
      await page.setViewport(viewport);
      page.setDefaultTimeout(20_000);
      page.on("request", (request) => {
        const url = new URL(request.url());
        if (url.protocol !== "data:" && !origins.includes(url.origin)) outside.push(url.href);
      });
      page.on("console", (message) => {
        if (message.type() === "error") consoleErrors.push(message.text());
      });
      page.on("pageerror", (error) => consoleErrors.push(String(error)));
      return page;
    },

    close: () => browser.close(),
  };
}

export type AxeViolation = { id: string; impact: string; help: string; nodes: string[] };

/**
 * axe-core run in the page (U5): its violations of impact serious or critical. The script comes
 * from node_modules and is evaluated over the DevTools protocol, so the page's CSP stays as it is.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const axe = (globalThis as any).axe;
    const result = await axe.run((globalThis as any).document, { resultTypes: ["violations"] });
    return result.violations
      .filter((v: any) => v.impact === "serious" || v.impact === "critical")
      .map((v: any) => ({
        id: v.id,
        impact: v.impact,
        help: v.help,
        nodes: v.nodes.map((n: any) => n.html),
      }));
  });
}

const screenshots = new URL("../../docs/console/", import.meta.url).pathname;

/**
 * With CONSOLE_SCREENSHOTS=1, the page as it is now into docs/console/<name>.png (docs/integrations/console.md
 * shows them); otherwise nothing, so a test run leaves the tree as it found it.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.CONSOLE_SCREENSHOTS !== "1") return;
  mkdirSync(screenshots, { recursive: true });
  // The whole page, up to 2400 px: enough to show a view, not a list's every row.
  const { width, height } = await page.evaluate(() => {
    const { document } = globalThis as any;
    return { width: document.documentElement.clientWidth, height: document.body.scrollHeight };
  });
  await page.screenshot({
    path: `${screenshots}${name}.png`,
    clip: { x: 0, y: 0, width, height: Math.min(height, 2400) },
    captureBeyondViewport: true,
  });
}

let found = 0;

/**
 * The element of `role` whose accessible name is `name` (inside `within`, if given), as the
 * browser's accessibility tree has it, polled until `timeoutMs`. Puppeteer's own `::-p-aria()`
 * selectors run the same DevTools query, but under Bun their handle comes back as the document,
 * so the query is sent here directly and the element it finds is handed back as a normal handle.
 */
export async function byRole(
  page: Page,
  role: string,
  name: string,
  { within, timeoutMs = 20_000 }: { within?: ElementHandle; timeoutMs?: number } = {},
): Promise<ElementHandle> {
  const session = await page.createCDPSession();
  try {
    const deadline = Date.now() + timeoutMs;
    const scopeMark = within ? `s${++found}` : undefined;
    if (within && scopeMark)
      await within.evaluate((e, mark) => e.setAttribute("data-test-scope", mark), scopeMark);
    for (;;) {
      const { result } = await session.send("Runtime.evaluate", {
        expression: scopeMark
          ? `document.querySelector('[data-test-scope="${scopeMark}"]')`
          : "document",
      });
      const { nodes } = result.objectId
        ? await session.send("Accessibility.queryAXTree", {
            objectId: result.objectId,
            accessibleName: name,
            role,
          })
        : { nodes: [] };
      const node = nodes.find((n) => !n.ignored && n.backendDOMNodeId !== undefined);
      if (node) {
        const { object } = await session.send("DOM.resolveNode", {
          backendNodeId: node.backendDOMNodeId,
        });
        const mark = `f${++found}`;
        await session.send("Runtime.callFunctionOn", {
          objectId: object.objectId,
          functionDeclaration: "function (mark) { this.setAttribute('data-test-found', mark); }",
          arguments: [{ value: mark }],
        });
        const handle = await page.$(`[data-test-found="${mark}"]`);
        if (handle) return handle;
      }
      if (Date.now() > deadline)
        throw new Error(`no ${role} named "${name}" after ${timeoutMs} ms`);
      await Bun.sleep(50);
    }
  } finally {
    await session.detach().catch(() => {});
  }
}

/** Presses the element of that role and name, once it is there (as a person would click it). */
export async function click(page: Page, role: string, name: string, within?: ElementHandle) {
  await (await byRole(page, role, name, { within })).click();
}

/** Types into the field of that role and name (its label), as a keyboard would. */
export async function fill(
  page: Page,
  role: string,
  name: string,
  text: string,
  within?: ElementHandle,
) {
  const field = await byRole(page, role, name, { within });
  await field.evaluate((element) => {
    (element as any).value = "";
  });
  await field.focus();
  await page.keyboard.sendCharacter(text);
}

/** Waits until the page shows `text`. */
export const sees = (page: Page, text: string) =>
  page.waitForFunction((t) => (globalThis as any).document.body.innerText.includes(t), {}, text);

export const heading = (page: Page, name: string) => byRole(page, "heading", name);

/** Whether the page shows an element of that role and name now. */
export const present = (page: Page, role: string, name: string) =>
  byRole(page, role, name, { timeoutMs: 0 }).then(
    () => true,
    () => false,
  );

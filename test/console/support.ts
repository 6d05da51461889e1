import { expect } from "bun:test";
import type { Page } from "puppeteer-core";
import {
  desktop,
  heading,
  openBrowser,
  phone,
  screenshot,
  seriousViolations,
} from "../harness/browser";
import { privateDatabase } from "../harness/private-database";
import { startStack } from "../harness/processes";

/**
 * Both services as processes, linked for the console (U1), and a headless Chromium that records
 * every request it makes. Each test file of the console starts one.
 */
/**
 * When the page is wider than its window (it scrolls sideways): the innermost elements that
 * reach past the right edge (at most 10), each as its tag, class and the start of its text.
 */
export function overflowing(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const document = (globalThis as any).document;
    const width = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth <= width) return [];
    const wide = [...document.querySelectorAll("body *")].filter(
      (element: any) => element.getBoundingClientRect().right > width + 1,
    );
    return wide
      .filter(
        (element: any) => !wide.some((other: any) => other !== element && element.contains(other)),
      )
      .slice(0, 10)
      .map(
        (element: any) =>
          `${element.tagName.toLowerCase()}.${element.className} ${(element.textContent ?? "").slice(0, 40)}`,
      );
  });
}

export async function openConsole({
  env = {} as Record<string, string>,
  /** A database of its own: for figures that count over whole tables (the health line's). */
  ownDatabase = false,
} = {}) {
  const database = ownDatabase ? await privateDatabase() : undefined;
  const stack = await startStack({ linkConsole: true, env, databaseUrl: database?.url });
  const browser = await openBrowser([stack.api.url, stack.payments.url]);

  /** N16: a one-time sign-in code for the admin, as `npm start` asks for one. */
  async function signInCode(): Promise<{ code: string; expires_at: string }> {
    const answer = await fetch(`${stack.api.url}/api/console/sign-in-codes`, {
      method: "POST",
      headers: { authorization: `Bearer ${stack.admin}` },
    });
    expect(answer.status).toBe(201);
    return (await answer.json()) as { code: string; expires_at: string };
  }

  /** A new tab signed in by the link `npm start` prints (a one-time code), on the orders view. */
  async function signedIn(viewport = desktop): Promise<Page> {
    const page = await browser.newPage(viewport);
    await page.goto(`${stack.api.url}/console#code=${(await signInCode()).code}`);
    await heading(page, "Orders");
    return page;
  }

  /** V5: the admin's token `sub`, the actor the console shows for its moves. */
  const adminSub = JSON.parse(Buffer.from(stack.admin.split(".")[1], "base64url").toString()).sub;

  return {
    stack,
    adminSub: adminSub as string,
    browser,
    signedIn,
    signInCode,

    /** U5: axe-core finds no serious or critical violation on the page as it is. */
    async accessible(page: Page) {
      expect(await seriousViolations(page)).toEqual([]);
    },

    /** A view at both widths: axe-core on each, and its screenshots (CONSOLE_SCREENSHOTS=1). */
    async everyWidth(path: string, name: string, ready: (page: Page) => Promise<unknown>) {
      for (const [size, viewport] of [
        ["desktop", desktop],
        ["phone", phone],
      ] as const) {
        const page = await signedIn(viewport);
        await page.goto(`${stack.api.url}${path}`);
        await ready(page);
        expect(await seriousViolations(page)).toEqual([]);
        // U5: nothing wider than the window, so the page never scrolls sideways.
        expect({ name, size, overflowing: await overflowing(page) }).toEqual({
          name,
          size,
          overflowing: [],
        });
        await screenshot(page, `${name}-${size}`);
        await page.close();
      }
    },

    /** U1: the browser asked no other host, and no script or style of the console was refused. */
    stayedHome() {
      expect(browser.outside).toEqual([]);
      expect(
        browser.consoleErrors.filter((error) => /Content Security Policy|Refused/.test(error)),
      ).toEqual([]);
    },

    async close() {
      await browser.close();
      await stack.stop();
      await database?.drop();
    },
  };
}

export type ConsoleTestbed = Awaited<ReturnType<typeof openConsole>>;

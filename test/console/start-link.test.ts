import { expect, setDefaultTimeout, test } from "bun:test";
import { heading, openBrowser } from "../harness/browser";
import { startNpmStart } from "../harness/npm-start";

/**
 * N16, U2 where the operator meets it: the link `npm start` prints carries a one-time code, not
 * the token, and it signs the console in once, in Chromium.
 */

setDefaultTimeout(120_000);

test("N16, U2 npm start prints a console link with a one-time code, never a token; it signs in once", async () => {
  const start = await startNpmStart();
  const { ports } = start;
  const browser = await openBrowser([
    `http://127.0.0.1:${ports.api}`,
    `http://127.0.0.1:${ports.payments}`,
  ]);
  try {
    const output = await start.ready(90_000);
    const link = output.match(/Operator console[^\n]*?(http:\/\/\S+\/console#\S+)/)?.[1];
    expect(link).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${ports.api}/console#code=`));
    const token = output.match(/ADMIN_TOKEN=(\S+)/)?.[1];
    expect(token).toBeDefined();
    expect(link).not.toContain(token as string);
    expect(link).not.toContain("token=");

    const page = await browser.newPage();
    await page.goto(link as string);
    await heading(page, "Orders");
    expect(page.url()).toBe(`http://127.0.0.1:${ports.api}/console`);
    // The printed link, used again (a second tab, the terminal's scrollback): it signs no one in.
    const again = await browser.newPage();
    await again.goto(link as string);
    await heading(again, "Operator console");
    expect(await again.evaluate(() => (globalThis as any).sessionStorage.length)).toBe(0);
  } finally {
    await browser.close();
    await start.stop();
  }
});

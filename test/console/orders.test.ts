import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Page } from "puppeteer-core";
import { byRole, click, fill, heading, present, sees } from "../harness/browser";
import { succeeded } from "../harness/processes";
import { type ConsoleTestbed, openConsole } from "./support";

/**
 * U3-U5 for orders in a real headless Chromium against both services as processes (U6): find an
 * order, read its timeline, move it after "Confirm" (with the mouse and with the keyboard alone),
 * a refused move's problem, the list's filter and pages.
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

describe("U3 orders", () => {
  test("U3 find an order by its id and read its timeline, its notification and raw body", async () => {
    const order = await con.stack.newOrder(2599);
    const notification = succeeded(order);
    expect((await con.stack.notify(notification)).status).toBe(200);
    await con.stack.paid(order.order_id);

    const page = await con.signedIn();
    await fill(page, "textbox", "Order id", String(order.order_id));
    await click(page, "button", "Go to order");
    await heading(page, `Order ${order.order_id}`);
    await sees(page, "source: webhook");
    await sees(page, notification.id);
    // The notification from payments, with its raw body.
    await sees(page, `"id": "${notification.id}"`);
    expect(await present(page, "button", "Refund")).toBe(true);
    expect(await present(page, "button", "Mark paid")).toBe(false);
    await con.accessible(page);
    await page.close();
  }, 60_000);

  test("U3 a move asks Confirm first; the order moves and its timeline says manual", async () => {
    const order = await con.stack.newOrder(1200);
    const page = await con.signedIn();
    await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
    await heading(page, `Order ${order.order_id}`);
    await click(page, "button", "Cancel order");
    await byRole(page, "button", "Confirm");
    expect(await con.stack.orderStatus(order.order_id)).toBe("created");
    await click(page, "button", "Confirm");
    await sees(page, "source: manual");
    expect(await con.stack.orderStatus(order.order_id)).toBe("cancelled");
    await page.close();
  }, 60_000);

  test("U4 a move the order no longer allows shows the problem's title and detail where it was asked", async () => {
    const order = await con.stack.newOrder(1500);
    const page = await con.signedIn();
    await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
    await heading(page, `Order ${order.order_id}`);
    // Someone else cancels it while this page still offers "Mark paid".
    await con.stack.callApi("PATCH", `/api/orders/${order.order_id}`, con.stack.admin, {
      status: "cancelled",
    });
    await click(page, "button", "Mark paid");
    await click(page, "button", "Confirm");
    const alert = await page.waitForSelector(".action [role=alert]");
    const text = await alert?.evaluate((element) => element.textContent ?? "");
    expect(text).toContain("Conflict");
    expect(text).toContain("cancelled");
    await page.close();
  });

  test("U3 the list filters by status and pages by next_after", async () => {
    for (let i = 0; i < 21; i++) await con.stack.newOrder(100 + i);
    const page = await con.signedIn();
    await page.select("#status-filter", "created");
    await page.waitForFunction(() => (globalThis as any).location.search === "?status=created");
    await click(page, "link", "Next page");
    await page.waitForFunction(() => (globalThis as any).location.search.includes("after="));
    await heading(page, "Orders");
    await click(page, "link", "First page");
    await page.waitForFunction(() => !(globalThis as any).location.search.includes("after="));
    await page.close();
  }, 90_000);
});

describe("U5 keyboard only", () => {
  /** Presses Tab until the focused element is the one `is` recognises; fails after 40 presses. */
  async function tabTo(page: Page, what: string, is: (element: any) => boolean) {
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press("Tab");
      if (
        await page.evaluate(
          is,
          await page.evaluateHandle(() => (globalThis as any).document.activeElement),
        )
      )
        return;
    }
    throw new Error(`Tab never reached ${what}`);
  }

  test("U5 an order is found and cancelled with the keyboard alone", async () => {
    const order = await con.stack.newOrder(900);
    const page = await con.signedIn();
    await tabTo(page, "the Order id field", (e) => e.id === "order-id");
    await page.keyboard.type(String(order.order_id));
    await page.keyboard.press("Enter");
    await heading(page, `Order ${order.order_id}`);
    await tabTo(page, "Cancel order", (e) => e.textContent === "Cancel order");
    await page.keyboard.press("Enter");
    // "Confirm" takes the focus, so Enter confirms.
    await page.waitForFunction(
      () => (globalThis as any).document.activeElement?.textContent === "Confirm",
    );
    await page.keyboard.press("Enter");
    await sees(page, "source: manual");
    expect(await con.stack.orderStatus(order.order_id)).toBe("cancelled");
    await page.close();
  });
});

test("U1 the browser asked no other host, and no script or style was refused", () => {
  con.stayedHome();
});

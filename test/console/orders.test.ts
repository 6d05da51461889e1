import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { ElementHandle, Page } from "puppeteer-core";
import { unique } from "../harness/basics";
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
    // The notification from payments, its raw body behind a disclosure the keyboard opens.
    await (await rawBodyDisclosure(page, notification.id)).focus();
    await page.keyboard.press("Enter");
    await sees(page, `"id": "${notification.id}"`);
    expect(await present(page, "button", "Record a refund made elsewhere")).toBe(true);
    expect(await present(page, "button", "Mark paid")).toBe(false);
    await con.accessible(page);
    await page.close();
  }, 60_000);

  test("U3 an order's page asks payments for no raw body until the operator opens one", async () => {
    const order = await con.stack.newOrder(1450);
    const first = succeeded(order);
    // A second payment for the paid order: a duplicate_payment review, and a second notification.
    const second = succeeded(order, { id: unique("evt") });
    expect((await con.stack.notify(first)).status).toBe(200);
    await con.stack.paid(order.order_id);
    expect((await con.stack.notify(second)).status).toBe(200);

    const page = await con.signedIn();
    // V3: GET /api/notifications/{id} is the one route that returns a raw body.
    const rawBodyReads: string[] = [];
    page.on("request", (request) => {
      const url = new URL(request.url());
      // The GETs only: Chromium reports each one's CORS preflight (OPTIONS) as a request too.
      if (
        request.method() === "GET" &&
        url.origin === con.stack.payments.url &&
        /^\/api\/notifications\/[^/]+$/.test(url.pathname) &&
        // V4's refusals list (no body in it) is read by the order page on its own.
        url.pathname !== "/api/notifications/rejected"
      )
        rawBodyReads.push(decodeURIComponent(url.pathname.split("/").pop() ?? ""));
    });
    await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
    await heading(page, `Order ${order.order_id}`);
    const disclosure = await rawBodyDisclosure(page, second.id);
    await rawBodyDisclosure(page, first.id);
    expect(rawBodyReads).toEqual([]);
    // Opening one reads that one: any read the page made by itself came before this click.
    await disclosure.click();
    await sees(page, `"id": "${second.id}"`);
    expect(rawBodyReads).toEqual([second.id]);
    await page.close();
  }, 60_000);

  test("U3, U4 an order with more notifications than one page links to all of them", async () => {
    const order = await con.stack.newOrder(1300);
    const prefix = unique("evt_many");
    // Stored as payments stores them (W5), more than the order's page asks for (100).
    await con.stack.sql`
      insert into payments.notifications (id, event, order_id, payment_ref, amount, currency, raw_body, source_ip)
      select ${prefix} || '_' || n, 'payment.failed', ${order.order_id}, ${prefix} || '_' || n,
        1300, 'USD', '{}', '127.0.0.1'
      from generate_series(1, 101) n`;
    const page = await con.signedIn();
    await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
    await heading(page, `Order ${order.order_id}`);
    await click(page, "link", `All 101 notifications of order ${order.order_id}`);
    await heading(page, "Notifications");
    await sees(page, "101 notifications");
    await page.close();
  }, 60_000);

  test("U3 the timeline's detail reads as its keys and values, the review it opened a link to it", async () => {
    const order = await con.stack.newOrder(2200);
    const notification = succeeded(order, { amount: 2000 });
    expect((await con.stack.notify(notification)).status).toBe(200);
    const page = await con.signedIn();
    await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
    await heading(page, `Order ${order.order_id}`);
    await sees(page, "review_opened");
    const entry = await elementWhere(page, "ol.timeline > li", ".badge", "review_opened");
    const details = await entry.$$eval(".detail dt, .detail dd", (cells) =>
      cells.map((cell) => cell.textContent ?? ""),
    );
    const review = Number(details[details.indexOf("review") + 1].replace("Review ", ""));
    expect(details).toEqual([
      "reason",
      "mismatch",
      // G5: whose payment reference it is.
      "provider",
      "generic",
      "review",
      `Review ${review}`,
      "payment ref",
      notification.id,
    ]);
    // The entry still names its source and notification, and holds no JSON text.
    const text = await entry.evaluate((li) => (li as any).innerText as string);
    expect(text).toContain("source: webhook");
    expect(text).toContain(`notification ${notification.id}`);
    expect(text).not.toContain("{");
    await click(page, "link", `Review ${review}`);
    await heading(page, `Review ${review}: mismatch open`);
    await sees(page, "$20.00");
    await page.close();
  }, 60_000);

  test("U3, V5 a move asks a Note, then Confirm; the order moves and its timeline says manual, by whom and why", async () => {
    const order = await con.stack.newOrder(1200);
    const page = await con.signedIn();
    await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
    await heading(page, `Order ${order.order_id}`);
    await click(page, "button", "Cancel order");
    await byRole(page, "button", "Confirm");
    // V5: no note, no move: the field is required.
    await click(page, "button", "Confirm");
    expect(await con.stack.orderStatus(order.order_id)).toBe("created");
    await fill(page, "textbox", "Note", "Customer asked by phone, ticket 77");
    await click(page, "button", "Confirm");
    await sees(page, "source: manual");
    await sees(page, "Customer asked by phone, ticket 77");
    await sees(page, `by ${con.adminSub}`);
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
      note: "cancelled elsewhere",
    });
    await click(page, "button", "Mark paid");
    await fill(page, "textbox", "Note", "Paid by bank transfer");
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

/** The first `selector` element with a `part` that reads `text`, once the page shows it. */
async function elementWhere(page: Page, selector: string, part: string, text: string) {
  const mark = unique("where");
  await page.waitForFunction(
    (selector, part, text, mark) => {
      const all = (globalThis as any).document.querySelectorAll(selector);
      const found = [...all].find((e: any) =>
        [...e.querySelectorAll(part)].some((p: any) => p.textContent === text),
      );
      found?.setAttribute("data-test-where", mark);
      return Boolean(found);
    },
    {},
    selector,
    part,
    text,
    mark,
  );
  return (await page.$(`[data-test-where="${mark}"]`)) as ElementHandle;
}

/** The "Show raw body" disclosure of the notification card titled with `id` (a `<summary>`). */
async function rawBodyDisclosure(page: Page, id: string): Promise<ElementHandle> {
  const card = await elementWhere(page, "article", "h3 code", id);
  // Chromium's role for a <summary>; its name is its text, as a screen reader reads it.
  return byRole(page, "DisclosureTriangle", "Show raw body", { within: card });
}

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
    // The "Note" takes the focus; Tab reaches "Confirm", and Enter confirms.
    await page.waitForFunction(
      () => (globalThis as any).document.activeElement?.id === "note-cancelled",
    );
    await page.keyboard.type("Duplicate order");
    await page.keyboard.press("Tab");
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

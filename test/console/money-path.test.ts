import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { ElementHandle } from "puppeteer-core";
import { eventually, unique } from "../harness/basics";
import { byRole, click, fill, heading, sees } from "../harness/browser";
import { succeeded } from "../harness/processes";
import { startWebhookReceiver } from "../harness/webhook-receiver";
import { type ConsoleTestbed, openConsole } from "./support";

/**
 * U3, U5 for the money path's repairs in a real headless Chromium against both services as
 * processes (U6): payment reviews, notifications and their replay, and axe-core with screenshots
 * of every view at desktop and phone width.
 */

// A browser test waits on a real Chromium and two services on two shared cores.
setDefaultTimeout(60_000);

let con: ConsoleTestbed;
const metricsToken = unique("scraper-token-of-32-characters-at-least");

beforeAll(async () => {
  // H7: the test's receiver is on loopback, over http. N4: /metrics is the scraper's only, as
  // in the compose deployment, so the health line must not depend on it.
  // Its own database, dropped at the end: the endpoints this file makes (one through the
  // browser, whose id only the page shows) can be left in no shared database, where every later
  // test's dispatcher would deliver to them; and the health line counts over whole tables.
  con = await openConsole({
    env: { WEBHOOK_ALLOW_HTTP: "1", WEBHOOK_ALLOW_PRIVATE: "1", METRICS_TOKEN: metricsToken },
    ownDatabase: true,
  });
}, 60_000);

afterAll(() => con?.close());

/** The open review of an order, once the api has opened it (open reviews come newest first). */
const openReviewOf = (orderId: number, what: string) =>
  eventually(
    async () => {
      const { json } = await con.stack.callApi(
        "GET",
        "/api/payment-reviews?status=open&per_page=100",
        con.stack.admin,
      );
      return json.items.find((r: any) => r.order_id === orderId);
    },
    15_000,
    what,
  );

describe("U3 payment reviews and notifications", () => {
  test("U3, V6 a mismatch review is applied with a note, accepting the amount received; the refusal names the checkbox, not a JSON field", async () => {
    const order = await con.stack.newOrder(5000);
    expect((await con.stack.notify(succeeded(order, { amount: 4500 }))).status).toBe(200);
    const review = await openReviewOf(order.order_id, "the mismatch review");

    const page = await con.signedIn();
    await click(page, "link", "Payment reviews");
    await heading(page, "Payment reviews");
    const title = await page.waitForSelector(`#review-${review.id}`);
    const card = (await title?.evaluateHandle((h) => h.closest("article"))) as ElementHandle;
    // V2: what the order expected beside what arrived, in the store's currency.
    const shown = await card.evaluate((element) => element.textContent ?? "");
    expect(shown).toContain("$50.00");
    expect(shown).toContain("$45.00");
    await fill(page, "textbox", "Note", "Customer paid 45.00 by agreement", card);
    // U4: applying without accepting the difference is the api's 409, shown in the review.
    await click(page, "button", "Apply", card);
    const refusal = await card.waitForSelector("[role=alert]");
    const said = await refusal?.evaluate((element) => element.textContent ?? "");
    expect(said).toContain("Accept the amount received");
    expect(said).not.toContain("accept_amount");
    expect(await con.stack.orderStatus(order.order_id)).toBe("created");
    await click(page, "checkbox", "Accept the amount received", card);
    await click(page, "button", "Apply", card);
    await con.stack.paid(order.order_id, 15_000);
    const timeline = await con.stack.callApi(
      "GET",
      `/api/orders/${order.order_id}/events`,
      con.stack.admin,
    );
    expect(timeline.json.items.at(-1)).toMatchObject({ type: "review_resolved", source: "review" });
    await page.close();
  }, 60_000);

  test("U3, V5 a notification is found by its order and replayed with a Note after Confirm; the Audit view shows who and why", async () => {
    const order = await con.stack.newOrder(700);
    const notification = succeeded(order);
    await con.stack.notify(notification);
    const page = await con.signedIn();
    await click(page, "link", "Notifications");
    await heading(page, "Notifications");
    await fill(page, "textbox", "Order", String(order.order_id));
    await page.select("#filter-provider", "generic");
    await click(page, "button", "Filter");
    await page.waitForFunction(() =>
      (globalThis as any).location.search.includes("provider=generic"),
    );
    await sees(page, notification.id);
    // V3: the provider and the payment reference (the notification id for generic).
    await sees(page, "Payment ref");
    await click(page, "button", "Replay");
    const why = `api database restored, ${unique("ticket")}`;
    await fill(page, "textbox", "Note", why);
    await click(page, "button", "Confirm");
    await sees(page, "Replay queued");
    await click(page, "link", "Audit");
    await heading(page, "Audit log");
    const row = await page.$$eval(
      "tbody tr",
      (rows, note) => {
        const found = rows.find((tr) => ((tr as any).innerText as string).includes(note));
        return found ? ((found as any).innerText as string) : undefined;
      },
      why,
    );
    expect(row).toContain(con.adminSub);
    expect(row).toContain("payments");
    await page.close();
  }, 60_000);
});

describe("U3 webhook endpoints", () => {
  test("U3 an endpoint is created showing its secret once; its deliveries show attempts and Retry", async () => {
    const receiver = await startWebhookReceiver(() => ({ status: 500, body: "receiver down" }));
    try {
      const page = await con.signedIn();
      await click(page, "link", "Webhooks");
      await heading(page, "Webhooks");
      await fill(page, "textbox", "URL", receiver.url);
      await click(page, "button", "Create endpoint");
      await sees(page, "shown this once");
      const shown = await page.$eval(".secret", (element) => element.textContent ?? "");
      const secret = shown.match(/whsec_[A-Za-z0-9+/=]+/)?.[0];
      const id = Number(shown.match(/Endpoint (\d+) created/)?.[1]);
      expect(secret).toBeDefined();

      const order = await con.stack.newOrder(1800);
      await con.stack.notify(succeeded(order));
      await con.stack.paid(order.order_id);
      await eventually(
        async () => (receiver.forOrder(order.order_id).length ? true : undefined),
        15_000,
        "a delivery attempt",
      );

      await click(page, "link", `Endpoint ${id}`);
      await heading(page, `Endpoint ${id}`);
      // H7: the secret is never shown again.
      expect(await page.evaluate(() => (globalThis as any).document.body.innerText)).not.toContain(
        secret,
      );
      await sees(page, "orders.paid");
      await page.click("details summary");
      await sees(page, "receiver down");
      receiver.answer(() => ({ status: 200 }));
      // U7: a manual retry shows the new attempt's outcome on its card.
      await click(page, "button", "Retry");
      await sees(page, "Delivered: the receiver answered 200");
      await con.accessible(page);
      await page.close();
    } finally {
      await receiver.close();
    }
  });
});

describe("U3 a failing endpoint", () => {
  test("U3 an endpoint the api disabled for failing is enabled again after Confirm", async () => {
    const [{ id }] = await con.stack.sql<{ id: string }[]>`
      insert into api.webhook_endpoints (url, events, status, disabled_reason, secret)
      values ('http://127.0.0.1:9/repaired', '{orders.refunded}', 'disabled', 'failing', 'whsec_dGVzdA==')
      returning id`;
    try {
      const page = await con.signedIn();
      await page.goto(`${con.stack.api.url}/console/webhooks/${id}`);
      await heading(page, `Endpoint ${id}`);
      await sees(page, "failing");
      await click(page, "button", "Enable endpoint");
      expect(await endpointStatus(id)).toBe("disabled");
      await fill(page, "textbox", "Note", "Receiver repaired, ticket 7731");
      await click(page, "button", "Confirm");
      await byRole(page, "button", "Disable endpoint");
      expect(await endpointStatus(id)).toBe("enabled");
      await page.close();
    } finally {
      await con.stack.sql`delete from api.webhook_endpoints where id = ${id}`;
    }
  });
});

const endpointStatus = async (id: string) =>
  (
    await con.stack.sql<
      { status: string }[]
    >`select status from api.webhook_endpoints where id = ${id}`
  )[0]?.status;

describe("U3 the health line", () => {
  test("U3, U7, N4 with METRICS_TOKEN set on both services the health line shows numbers, and counts every disabled endpoint apart from failing ones", async () => {
    for (const service of [con.stack.api, con.stack.payments]) {
      expect((await fetch(`${service.url}/metrics`)).status).toBe(401);
      const scraped = await fetch(`${service.url}/metrics`, {
        headers: { authorization: `Bearer ${metricsToken}` },
      });
      expect(scraped.status).toBe(200);
      await scraped.arrayBuffer();
    }
    // More endpoints disabled for failing than one page of the endpoint list holds (100).
    const added = await con.stack.sql<{ id: string }[]>`
      insert into api.webhook_endpoints (url, events, status, disabled_reason, secret)
      select 'http://127.0.0.1:9/failing-' || n, '{*}', 'disabled', 'failing', 'whsec_dGVzdA=='
      from generate_series(1, 101) n
      returning id`;
    try {
      const [{ failing }] = await con.stack.sql<{ failing: number }[]>`
        select count(*)::int as failing from api.webhook_endpoints where status = 'disabled'`;
      expect(failing).toBeGreaterThan(100);
      const page = await con.signedIn();
      const line = () =>
        page.$$eval(".health li", (items) => items.map((item) => item.textContent ?? ""));
      // The figures are cached for 5 s (N4): a view opened later reads the new count.
      const shown = await eventually(
        async () => {
          await page.goto(`${con.stack.api.url}/console`);
          await heading(page, "Orders");
          const items = await line();
          return items.includes(`Disabled endpoints: ${failing}`) ? items : undefined;
        },
        15_000,
        "the health line counting every failing endpoint",
      );
      expect(shown).toContain("api: ready");
      expect(shown).toContain("payments: ready");
      for (const label of [
        "Failing endpoints",
        "Outbox backlog",
        "Set aside",
        "Consumer lag",
        "Open reviews",
      ])
        expect(shown.find((item) => item.startsWith(`${label}: `))).toMatch(/: \d+$/);
      expect(shown.join(" ")).not.toContain("unknown");
      await page.close();
    } finally {
      const ids = added.map((row) => row.id);
      await con.stack.sql`delete from api.webhook_endpoints where id in ${con.stack.sql(ids)}`;
    }
  });
});

describe("U5 every view", () => {
  test("U5 no serious or critical axe violation, at desktop and phone width (screenshots)", async () => {
    // First, so the order's events make deliveries (to a closed port: failed attempts to show).
    const endpoint = await con.stack.callApi("POST", "/api/webhook-endpoints", con.stack.admin, {
      url: "http://127.0.0.1:9/hook",
      events: ["*"],
      description: "Warehouse",
    });
    const order = await con.stack.newOrder(3250, 2);
    await con.stack.notify(succeeded(order));
    await con.stack.paid(order.order_id);
    await con.stack.notify(succeeded(order, { amount: 100, id: unique("evt") }));
    // The second payment's review: the order's timeline links to it, and it has its own view.
    const review = await openReviewOf(order.order_id, "the second payment's review");
    await con.everyWidth("/console", "orders", (page) => heading(page, "Orders"));
    await con.everyWidth(`/console/orders/${order.order_id}`, "order", (page) =>
      sees(page, "Show raw body"),
    );
    await con.everyWidth("/console/reviews", "reviews", (page) => heading(page, "Payment reviews"));
    await con.everyWidth(`/console/reviews/${review.id}`, "review", (page) =>
      heading(page, `Review ${review.id}: ${review.reason.replaceAll("_", " ")} open`),
    );
    await con.everyWidth("/console/webhooks", "webhooks", (page) => heading(page, "Webhooks"));
    await con.everyWidth(`/console/webhooks/${endpoint.json.id}`, "endpoint", (page) =>
      heading(page, `Endpoint ${endpoint.json.id}`),
    );
    await con.everyWidth(
      `/console/notifications?order_id=${order.order_id}`,
      "notifications",
      (page) => heading(page, "Notifications"),
    );
  }, 120_000);
});

test("U1 the browser asked no other host, and no script or style was refused", () => {
  con.stayedHome();
});

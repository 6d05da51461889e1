import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { ElementHandle, Page } from "puppeteer-core";
import { messagePayload } from "../../services/payments/src/lib/outbox-message";
import { eventually, unique } from "../harness/basics";
import { byRole, click, fill, heading, present, sees } from "../harness/browser";
import { succeeded } from "../harness/processes";
import {
  otherStripeSecret,
  paymentIntent,
  providersEnv,
  stripeEvent,
  stripeRequest,
} from "../harness/provider-requests";
import { startWebhookReceiver, type WebhookReceiver } from "../harness/webhook-receiver";
import { type ConsoleTestbed, openConsole } from "./support";

/**
 * U7: each of the operator's five questions walked end to end in a real headless Chromium against
 * both services as processes: a receiver that fails, a wrong webhook secret, a disabled endpoint
 * replayed, a manual cancel with a note. Elements are found by role and accessible name.
 */

setDefaultTimeout(90_000);

let con: ConsoleTestbed;
const madeEndpoints: number[] = [];
const receivers: WebhookReceiver[] = [];

beforeAll(async () => {
  // H7: the test's receivers are on loopback, over http.
  // Its own database: the health line counts failing endpoints and refusals over whole tables.
  con = await openConsole({
    // Stripe and Adyen on too, so refusals of each provider can be seen (N21).
    env: { WEBHOOK_ALLOW_HTTP: "1", WEBHOOK_ALLOW_PRIVATE: "1", ...providersEnv },
    ownDatabase: true,
  });
}, 60_000);

afterAll(async () => {
  // An endpoint left enabled in the shared test database would receive every later test's events.
  if (con && madeEndpoints.length)
    await con.stack
      .sql`delete from api.webhook_endpoints where id in ${con.stack.sql(madeEndpoints)}`;
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await con?.close();
});

/** An endpoint for `receiver`, subscribed to every order event, with a description. */
async function endpointFor(receiver: WebhookReceiver, description: string): Promise<number> {
  const made = await con.stack.callApi("POST", "/api/webhook-endpoints", con.stack.admin, {
    url: receiver.url,
    events: ["*"],
    description,
  });
  expect(made.status).toBe(201);
  madeEndpoints.push(made.json.id);
  return made.json.id;
}

async function receiver(answer?: Parameters<typeof startWebhookReceiver>[0]) {
  const started = await startWebhookReceiver(answer);
  receivers.push(started);
  return started;
}

const text = (element: ElementHandle | Page) =>
  "evaluate" in element && !("goto" in element)
    ? (element as ElementHandle).evaluate((e) => (e as any).innerText)
    : (element as Page).evaluate(() => (globalThis as any).document.body.innerText as string);

/** The section of the order page named `name` (its heading), once it stopped loading. */
async function section(page: Page, name: string): Promise<ElementHandle> {
  const found = await byRole(page, "region", name);
  await page.waitForFunction((e) => !(e as any).innerText.includes("Loading…"), {}, found);
  return found;
}

describe("U7 Did the warehouse hear of order N?", () => {
  test("U7, H4 the order page lists its deliveries per endpoint; a failing receiver shows failing; Retry shows the new attempt's outcome", async () => {
    const warehouse = await receiver(() => ({ status: 503, body: "warehouse down" }));
    const mail = await receiver();
    const warehouseId = await endpointFor(warehouse, `Warehouse ${unique("w")}`);
    await endpointFor(mail, `Receipts ${unique("m")}`);
    const order = await con.stack.newOrder(2400);
    await con.stack.notify(succeeded(order));
    await con.stack.paid(order.order_id);
    await eventually(
      async () => (warehouse.forOrder(order.order_id).length ? true : undefined),
      20_000,
      "an attempt at the warehouse",
    );

    const page = await con.signedIn();
    await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
    await heading(page, `Order ${order.order_id}`);
    const deliveries = await section(page, "Webhook deliveries");
    const toWarehouse = await byRole(page, "region", `Deliveries to Warehouse`, {
      within: deliveries,
    }).catch(() => undefined);
    // The endpoint's description names its table.
    const shown = await text(deliveries);
    expect(shown).toContain("Warehouse");
    expect(shown).toContain("Receipts");
    expect(shown).toContain("orders.paid");
    expect(shown).toContain("503");
    expect(toWarehouse ?? deliveries).toBeDefined();

    // The webhook list says the warehouse endpoint is failing now, with its description.
    await click(page, "link", "Webhooks");
    await heading(page, "Webhooks");
    const row = await (await byRole(page, "link", `Endpoint ${warehouseId}`)).evaluateHandle(
      (a) => a.closest("tr") as any,
    );
    const rowText = await (row as ElementHandle).evaluate((e) => (e as any).innerText);
    expect(rowText).toContain("Warehouse");
    expect(rowText).toContain("failing");

    // The receiver is back: "Retry" on the order page attempts now and says what came of it.
    warehouse.answer(() => ({ status: 200 }));
    await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
    const again = await section(page, "Webhook deliveries");
    const warehouseTable = await (
      await byRole(page, "link", (await text(again)).match(/Warehouse \w+/)?.[0] ?? "Warehouse", {
        within: again,
      })
    ).evaluateHandle((a) => a.closest("section") as any);
    // The oldest event first: the order's later events wait behind it (H5).
    const firstRow = await (warehouseTable as ElementHandle).evaluateHandle(
      (s) => (s as any).querySelector("tbody tr") as any,
    );
    expect(await (firstRow as ElementHandle).evaluate((e) => (e as any).innerText)).toContain(
      "orders.created",
    );
    await click(page, "button", "Retry", firstRow as ElementHandle);
    await sees(page, "Delivered: the receiver answered 200");
    await con.accessible(page);
    await page.close();
  });
});

describe("U7 Retry on a delivery that succeeded", () => {
  test("U7, H4 Retry on a succeeded delivery asks first; Back sends nothing; Send again delivers the event a second time", async () => {
    const mail = await receiver();
    const name = `Receipts ${unique("r")}`;
    await endpointFor(mail, name);
    const order = await con.stack.newOrder(1300);
    await con.stack.notify(succeeded(order));
    await con.stack.paid(order.order_id);
    const delivered = () => mail.forOrder(order.order_id).length;
    await eventually(
      async () => (delivered() >= 2 ? true : undefined),
      20_000,
      "orders.created and orders.paid delivered",
    );
    const before = delivered();

    const page = await con.signedIn();
    await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
    const deliveries = await section(page, "Webhook deliveries");
    const table = await (await byRole(page, "link", name, { within: deliveries })).evaluateHandle(
      (a) => a.closest("section") as any,
    );
    const row = (await (table as ElementHandle).evaluateHandle(
      (s) => (s as any).querySelector("tbody tr") as any,
    )) as ElementHandle;
    expect(await row.evaluate((e) => (e as any).innerText)).toContain("succeeded");

    await click(page, "button", "Retry", row);
    await sees(page, "Delivered already: the receiver gets this event a second time.");
    await con.accessible(page);
    await click(page, "button", "Back", row);
    await byRole(page, "button", "Retry", { within: row });
    await Bun.sleep(500);
    expect(delivered()).toBe(before);

    await click(page, "button", "Retry", row);
    await click(page, "button", "Send again", row);
    await sees(page, "Delivered: the receiver answered 200");
    expect(delivered()).toBe(before + 1);
    await page.close();
  });
});

describe("U7 What is failing now?", () => {
  test("U7 a receiver that fails counts on the health line, which refreshes by itself and links to the list", async () => {
    const page = await con.signedIn();
    const figure = async (label: string) =>
      (await page.$$eval(".health li", (items) => items.map((i) => i.textContent ?? ""))).find(
        (item) => item.startsWith(`${label}: `),
      );
    // This file's earlier endpoints are disabled first, so "failing now" starts from none.
    if (madeEndpoints.length)
      await con.stack.sql`update api.webhook_endpoints set status = 'disabled',
        disabled_reason = 'manual' where id in ${con.stack.sql(madeEndpoints)}`;
    await eventually(
      async () => {
        await page.goto(`${con.stack.api.url}/console`);
        await page.waitForSelector(".health li");
        return (await figure("Failing endpoints")) === "Failing endpoints: 0" ? true : undefined;
      },
      20_000,
      "no endpoint failing",
    );
    const before = 0;

    const down = await receiver(() => ({ status: 500, body: "down" }));
    const id = await endpointFor(down, `Ledger ${unique("l")}`);
    const order = await con.stack.newOrder(1300);
    await con.stack.notify(succeeded(order));
    await eventually(
      async () => (down.forOrder(order.order_id).length ? true : undefined),
      20_000,
      "a failed attempt",
    );
    // No navigation: the line reads the figures again by itself (every 10 s, 5 s cache).
    const after = await eventually(
      async () => {
        const shown = Number((await figure("Failing endpoints"))?.split(": ")[1]);
        return shown > before ? shown : undefined;
      },
      40_000,
      "the health line counting the failing endpoint by itself",
    );
    expect(after).toBeGreaterThan(before);
    for (const label of ["Disabled endpoints", "Oldest pending delivery", "Set aside"])
      expect(await figure(label)).toBeDefined();
    // Each number links to its list.
    const failing = await page.$$eval(".health li", (items) =>
      items
        .filter((i) => (i.textContent ?? "").startsWith("Failing endpoints: "))
        .map((i) => i.querySelector("a")?.getAttribute("href")),
    );
    expect(failing).toEqual(["/console/webhooks"]);
    await page.click(".health li.health-bad a[href='/console/webhooks']");
    await heading(page, "Webhooks");
    await byRole(page, "link", `Endpoint ${id}`);
    await con.stack.callApi("PATCH", `/api/webhook-endpoints/${id}`, con.stack.admin, {
      status: "disabled",
    });
    await page.close();
  });

  test("U7 the health line does not refresh while the tab is hidden", async () => {
    const page = await con.signedIn();
    await page.waitForSelector(".health li");
    let reads = 0;
    page.on("request", (request) => {
      if (new URL(request.url()).pathname === "/api/status") reads++;
    });
    await page.evaluate(() => {
      const { document } = globalThis as any;
      Object.defineProperty(document, "visibilityState", { value: "hidden", configurable: true });
      document.dispatchEvent(new Event("visibilitychange"));
    });
    await Bun.sleep(12_000);
    expect(reads).toBe(0);
    await page.evaluate(() => {
      const { document } = globalThis as any;
      Object.defineProperty(document, "visibilityState", { value: "visible", configurable: true });
      document.dispatchEvent(new Event("visibilitychange"));
    });
    await eventually(async () => (reads > 0 ? true : undefined), 5_000, "a read on return");
    await page.close();
  });
});

describe("U7 H3 a disabled endpoint and Replay missing", () => {
  test("H3 (v5), U7 events while an endpoint is disabled get no delivery (the console says so); its page says when and by whom it was disabled, and Replay missing from that moment delivers them", async () => {
    const warehouse = await receiver();
    const id = await endpointFor(warehouse, `Warehouse ${unique("d")}`);
    const page = await con.signedIn();
    await page.goto(`${con.stack.api.url}/console/webhooks/${id}`);
    await heading(page, `Endpoint ${id}`);
    await click(page, "button", "Disable endpoint");
    await sees(page, "get no delivery at all");
    await sees(page, "Replay missing");
    // V5: the console asks why; the note is on the audit log with the admin's name.
    const why = `Warehouse maintenance, ticket ${unique("t")}`;
    await fill(page, "textbox", "Note", why);
    await click(page, "button", "Confirm");
    await byRole(page, "button", "Enable endpoint");
    const audit = await con.stack.callApi("GET", "/api/audit?per_page=20", con.stack.admin);
    expect(
      audit.json.items.find(
        (e: { action: string; target: string }) =>
          e.action === "webhook_endpoint.disable" && e.target === `webhook-endpoint/${id}`,
      )?.detail,
    ).toEqual({ note: why });

    const order = await con.stack.newOrder(1100);
    await con.stack.notify(succeeded(order));
    await con.stack.paid(order.order_id);
    await Bun.sleep(1500);
    expect(warehouse.forOrder(order.order_id)).toEqual([]);

    await click(page, "button", "Enable endpoint");
    await fill(page, "textbox", "Note", "Maintenance over");
    await click(page, "button", "Confirm");
    await byRole(page, "button", "Disable endpoint");
    // H3 (v5): the page says when and by whom it was disabled, and offers that moment (to the
    // minute, in the viewer's zone) as the date to replay from.
    await sees(page, "Last disabled");
    await sees(page, `by ${con.adminSub}`);
    const endpoint = await con.stack.callApi(
      "GET",
      `/api/webhook-endpoints/${id}`,
      con.stack.admin,
    );
    const disabledAt = new Date(endpoint.json.disabled_at);
    expect(endpoint.json.disabled_by).toBe(con.adminSub);
    const since = await byRole(page, "textbox", "Replay events since").catch(() =>
      page.$("#replay-missing-since"),
    );
    expect(since).toBeTruthy();
    const local = new Date(disabledAt.getTime() - disabledAt.getTimezoneOffset() * 60_000)
      .toISOString()
      .slice(0, 16);
    expect(
      await page.$eval("#replay-missing-since", (e) => (e as unknown as { value: string }).value),
    ).toBe(local);
    await click(page, "button", "Replay missing");
    await sees(page, "queued");
    expect(await text(page)).toMatch(/[1-9]\d* deliver(y|ies) queued/);
    await eventually(
      async () =>
        warehouse.forOrder(order.order_id).some((r) => r.json.type === "orders.paid")
          ? true
          : undefined,
      20_000,
      "the replayed orders.paid",
    );
    // Idempotent: a second press queues nothing new.
    await click(page, "button", "Replay missing");
    await sees(page, "Nothing to queue");
    await con.accessible(page);
    await page.close();
  });
});

describe("U7 Who did this, and why?", () => {
  test("V5, U7 a manual cancel with a note: the timeline shows actor and note; the Audit view shows endpoint actions by whom", async () => {
    const order = await con.stack.newOrder(700);
    const page = await con.signedIn();
    await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
    await heading(page, `Order ${order.order_id}`);
    await click(page, "button", "Cancel order");
    const note = `Customer called, ticket ${unique("t")}`;
    await fill(page, "textbox", "Note", note);
    await click(page, "button", "Confirm");
    await sees(page, note);
    await sees(page, `by ${con.adminSub}`);
    expect(await con.stack.orderStatus(order.order_id)).toBe("cancelled");

    const hook = await receiver();
    const id = await endpointFor(hook, `Audit ${unique("a")}`);
    await con.stack.callApi("PATCH", `/api/webhook-endpoints/${id}`, con.stack.admin, {
      status: "disabled",
    });
    await click(page, "link", "Audit");
    await heading(page, "Audit log");
    const rows = await page.$$eval("tbody tr", (trs) => trs.map((tr) => (tr as any).innerText));
    const ours = rows.filter((row) => row.includes(`webhook-endpoint/${id}`));
    expect(ours.length).toBeGreaterThanOrEqual(2);
    for (const row of ours) expect(row).toContain(con.adminSub);
    expect(await text(page)).not.toContain("whsec_");
    await page.close();
  });
});

describe("U7 Why is order N not paid? What did payments refuse?", () => {
  test("U7, V4, N21 (v5) a notification signed with a wrong secret shows on the order page and on the Refusals view, in words; each refusal's hint names its own provider's secret", async () => {
    const order = await con.stack.newOrder(1600);
    const refused = await con.stack.notify(succeeded(order), {
      secret: "whsec_a_rotated_or_mistyped_secret",
    });
    expect(refused.status).toBe(401);
    // The same order claimed by a Stripe event signed with a secret payments does not have.
    const stripe = await stripeRequest(
      stripeEvent("payment_intent.succeeded", paymentIntent(order.order_id)),
      { secret: otherStripeSecret },
    );
    const stripeRefused = await fetch(`${con.stack.payments.url}/api/webhooks/stripe`, {
      method: "POST",
      headers: stripe.headers,
      body: await stripe.text(),
    });
    expect(stripeRefused.status).toBe(401);
    const page = await con.signedIn();
    await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
    await heading(page, `Order ${order.order_id}`);
    // Refusals are written in batches (W7): the page shows them once they are.
    const shown = await eventually(
      async () => {
        await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
        const refusals = await section(page, "Refused by payments");
        const said = await text(refusals);
        return said.includes("Signature does not match") ? said : undefined;
      },
      30_000,
      "the refusal on the order page",
    );
    expect(shown).toContain("none of them changed it");
    expect(await con.stack.orderStatus(order.order_id)).toBe("created");
    // N21: each cause names the secret setting of the provider whose signature failed.
    const both = await eventually(
      async () => {
        await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
        const said = await text(await section(page, "Refused by payments"));
        return said.includes("stripe: Signature does not match") ? said : undefined;
      },
      30_000,
      "the Stripe refusal on the order page",
    );
    // The true count of refusals naming the order, of both providers.
    expect(both).toContain("Payments refused 2 notifications naming this order");
    expect(both).toMatch(/stripe: Signature does not match[^\n]*STRIPE_WEBHOOK_SECRETS/);
    expect(both).toMatch(/generic: Signature does not match[^\n]*PAYMENT_WEBHOOK_SECRETS/);

    await click(page, "link", "Refusals");
    await heading(page, "Refused notifications");
    await sees(page, "Signature does not match");
    await byRole(page, "link", `Order ${order.order_id}`);
    const cards = await page.$$eval("article.card", (all) =>
      all.map((card) => (card as unknown as { innerText: string }).innerText),
    );
    const stripeCard = cards.find((card) => card.startsWith("stripe: Signature does not match"));
    expect(stripeCard).toContain("STRIPE_WEBHOOK_SECRETS");
    expect(stripeCard).not.toContain("PAYMENT_WEBHOOK_SECRETS");
    await con.accessible(page);
    await page.close();
  });
});

describe("V6 guard rails in the console", () => {
  test("V6 Mark paid is not offered while a review is open (the review is linked); Apply is not offered on a duplicate_payment review, saying why", async () => {
    const order = await con.stack.newOrder(1290);
    await con.stack.notify(succeeded(order, { amount: 1000 }));
    const review = await eventually(async () => {
      const { json } = await con.stack.callApi(
        "GET",
        "/api/payment-reviews?status=open&per_page=100",
        con.stack.admin,
      );
      return json.items.find((r: any) => r.order_id === order.order_id);
    });
    const page = await con.signedIn();
    await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
    await heading(page, `Order ${order.order_id}`);
    expect(await present(page, "button", "Mark paid")).toBe(false);
    expect(await present(page, "button", "Cancel order")).toBe(true);
    await click(page, "link", `Review ${review.id}`);
    await heading(page, `Review ${review.id}: mismatch open`);

    const paidOrder = await con.stack.newOrder(900);
    await con.stack.notify(succeeded(paidOrder));
    await con.stack.paid(paidOrder.order_id);
    await con.stack.notify(succeeded(paidOrder, { id: unique("evt") }));
    const duplicate = await eventually(async () => {
      const { json } = await con.stack.callApi(
        "GET",
        "/api/payment-reviews?status=open&per_page=100",
        con.stack.admin,
      );
      return json.items.find((r: any) => r.order_id === paidOrder.order_id);
    });
    expect(duplicate.reason).toBe("duplicate_payment");
    await page.goto(`${con.stack.api.url}/console/reviews/${duplicate.id}`);
    await heading(page, `Review ${duplicate.id}: duplicate payment open`);
    expect(await present(page, "button", "Apply")).toBe(false);
    await byRole(page, "button", "Dismiss");
    await sees(page, "already paid, so there is nothing to apply");

    // Recording a refund made elsewhere says that no money is sent back.
    await page.goto(`${con.stack.api.url}/console/orders/${paidOrder.order_id}`);
    await click(page, "button", "Record a refund made elsewhere");
    await sees(page, "No money is sent back");
    await page.close();
  });
});

describe("U7, U5 the new views at both widths", () => {
  test("U7, U5 no serious or critical axe violation on the order page, audit, endpoint, webhook list and set-aside views, at 1280 and 390 px (screenshots)", async () => {
    const warehouse = await receiver(() => ({ status: 500, body: "down" }));
    const id = await endpointFor(warehouse, "Warehouse");
    // "Why is order N not paid?": an amount that differs (an open review) and a refused payment.
    const order = await con.stack.newOrder(3250, 2);
    await con.stack.notify(succeeded(order, { amount: 100 }));
    await con.stack.notify(succeeded(order), { secret: "whsec_mistyped" });
    // "Who did this, and why?": a manual cancel with a note.
    const cancelled = await con.stack.newOrder(1200);
    await con.stack.callApi("PATCH", `/api/orders/${cancelled.order_id}`, con.stack.admin, {
      status: "cancelled",
      note: "Customer changed their mind (ticket 4411)",
    });
    await eventually(
      async () => (warehouse.forOrder(order.order_id).length ? true : undefined),
      20_000,
      "a failed attempt",
    );
    await con.everyWidth(`/console/orders/${order.order_id}`, "order-questions", (page) =>
      eventually(
        async () => {
          await page.reload();
          await section(page, "Webhook deliveries");
          const refused = await text(await section(page, "Refused by payments"));
          return refused.includes("Signature does not match") ? true : undefined;
        },
        30_000,
        "the order page with its refusal",
      ),
    );
    await con.everyWidth(`/console/orders/${cancelled.order_id}`, "order-note", (page) =>
      sees(page, "ticket 4411"),
    );
    // An audit entry whose detail is one long word (a JSON list), as an endpoint change writes it.
    const changed = await con.stack.callApi(
      "PATCH",
      `/api/webhook-endpoints/${id}`,
      con.stack.admin,
      {
        events: ["orders.paid", "orders.cancelled", "orders.refunded"],
        note: "Subscribed to the refunds as well (ticket 5120)",
      },
    );
    expect(changed.status).toBe(200);
    await con.everyWidth("/console/audit", "audit", (page) => sees(page, "ticket 5120"));
    await con.everyWidth(`/console/webhooks/${id}`, "endpoint-recovery", (page) =>
      byRole(page, "button", "Replay missing"),
    );
    await con.everyWidth("/console/webhooks", "webhooks-failing", (page) =>
      heading(page, "Webhooks"),
    );
    await con.everyWidth("/console/outbox", "set-aside", (page) =>
      heading(page, "Messages set aside"),
    );
  });

  test("U7, U5 no serious or critical axe violation on the refusals view, at 1280 and 390 px (screenshot)", async () => {
    const order = await con.stack.newOrder(990);
    await con.stack.notify(succeeded(order), { secret: "whsec_mistyped_again" });
    await con.everyWidth("/console/refusals", "refusals", async (page) => {
      await heading(page, "Refused notifications");
      await eventually(
        async () => {
          await page.goto(`${con.stack.api.url}/console/refusals`);
          await heading(page, "Refused notifications");
          return (await text(page)).includes(`Order ${order.order_id}`) ? true : undefined;
        },
        30_000,
        "the refusal listed",
      );
    });
  });

  test("B3, U7 (v5) a payment found only by reconciliation pays its order with source reconciliation; the Reconciliation view lists it with the last run of each kind (axe at 1280 and 390 px, screenshots)", async () => {
    const order = await con.stack.newOrder(4_200);
    const id = unique("reconcile:pi_console").replaceAll("-", "_");
    // Stored as a reconciliation run stores what it found: the notification and its outbox row,
    // in one statement, the payload built as every message's (the relay publishes it).
    await con.stack.sql`
      with stored as (
        insert into payments.notifications (id, provider, event, order_id, payment_ref, amount,
          currency, raw_body, source_ip, source)
        values (${id}, 'stripe', 'payment_intent.succeeded', ${order.order_id}, 'pi_console',
          ${order.amount}, ${order.currency}, '{}', '127.0.0.1', 'reconciliation')
        returning *
      )
      insert into payments.outbox (subject, message_id, payload)
      select ${con.stack.topology.payments.orderPaid}, key, ${messagePayload(con.stack.sql)}
      from stored`;
    await eventually(
      async () => {
        const [row] = await con.stack.sql`
          select source from api.order_events where order_id = ${order.order_id} and type = 'paid'`;
        return row?.source === "reconciliation" ? true : undefined;
      },
      30_000,
      "the order paid by the reconciliation message",
    );
    await con.everyWidth("/console/reconciliation", "reconciliation", async (page) => {
      await heading(page, "Reconciliation");
      await sees(page, "The last run of each kind");
      const shown = await text(page);
      expect(shown).toContain("Adyen payment accounting report");
      expect(shown).toContain(`Order ${order.order_id}`);
      expect(shown).toContain(`stripe:${id}`);
      expect(shown).toContain("webhooks to this shop are failing");
    });
    const page = await con.signedIn();
    await page.goto(`${con.stack.api.url}/console/orders/${order.order_id}`);
    await heading(page, `Order ${order.order_id}`);
    await eventually(
      async () => ((await text(page)).includes("reconciliation") ? true : undefined),
      10_000,
      "the timeline's source",
    );
    await page.close();
  });
});

test("U1 the browser asked no other host, and no script or style was refused", () => {
  con.stayedHome();
});

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eventually } from "../harness/basics";
import { byRole, click, fill, heading, present, sees } from "../harness/browser";
import {
  paymentIntent,
  providersEnv,
  stripeEvent,
  stripeRequest,
} from "../harness/provider-requests";
import { type StripeApi, startStripeApi } from "../harness/providers/stripe-api";
import { type ConsoleTestbed, openConsole } from "./support";

/**
 * F5 in a real headless Chromium against both services as processes, Stripe's API the local
 * server: "Refund" on a paid order's page, the refund's status as it moves, a refusal in words,
 * and "Record a refund made elsewhere" kept for the rest.
 */

setDefaultTimeout(60_000);

let con: ConsoleTestbed;
let stripeApi: StripeApi;

beforeAll(async () => {
  stripeApi = await startStripeApi();
  con = await openConsole({
    env: { ...providersEnv, STRIPE_API_KEY: stripeApi.apiKey, STRIPE_API_URL: stripeApi.url },
  });
}, 60_000);

afterAll(async () => {
  await con?.close();
  await stripeApi?.stop();
});

/** An order paid through the local Stripe (a PaymentIntent it holds, and its webhook). */
async function paidThroughStripe(amount: number) {
  const order = await con.stack.newOrder(amount);
  const intent = stripeApi.paymentIntent(amount, "usd", order.order_id);
  const built = await stripeRequest(
    stripeEvent(
      "payment_intent.succeeded",
      paymentIntent(order.order_id, { id: intent.id, amount, amount_received: amount }),
    ),
  );
  const answer = await fetch(`${con.stack.payments.url}/api/webhooks/stripe`, {
    method: "POST",
    headers: built.headers,
    body: await built.text(),
  });
  expect(answer.status).toBe(200);
  await con.stack.paid(order.order_id);
  return { orderId: order.order_id, intent: intent.id };
}

describe("F5 refunds from the order page", () => {
  test('F5: "Refund" with an amount (the rest by default) and a note refunds through Stripe; the refund shows succeeded and the order refunded_amount', async () => {
    const { orderId, intent } = await paidThroughStripe(2400);
    const page = await con.signedIn();
    await page.goto(`${con.stack.api.url}/console/orders/${orderId}`);
    await heading(page, `Order ${orderId}`);
    await sees(page, "No refund was asked for through a provider.");
    expect(await present(page, "button", "Record a refund made elsewhere")).toBe(true);
    const amount = await byRole(page, "spinbutton", "Amount (minor units of USD)");
    expect(await amount.evaluate((input) => (input as unknown as { value: string }).value)).toBe(
      "2400",
    );
    // Select what is there and type over it, as a person would.
    await amount.click({ count: 3 });
    await page.keyboard.press("Backspace");
    await amount.type("900");
    expect(await amount.evaluate((input) => (input as unknown as { value: string }).value)).toBe(
      "900",
    );
    await fill(page, "textbox", "Note", "One lamp arrived broken (ticket 7120)");
    await click(page, "button", "Refund");
    await sees(page, "The provider made it: the money went back");
    // The order's facts as read again: what the provider gave back.
    await page.reload();
    await sees(page, "Given back");
    await eventually(async () => (stripeApi.refunds(intent).length === 1 ? true : undefined));
    expect(stripeApi.refunds(intent)[0].amount).toBe(900);
    await con.accessible(page);
    await page.close();
    await con.everyWidth(`/console/orders/${orderId}`, "order-refunds", (p) =>
      sees(p, "The provider made it: the money went back"),
    );
  });

  test("F5: a refund Stripe refuses is shown failed with Stripe's reason in words", async () => {
    const { orderId, intent } = await paidThroughStripe(1300);
    stripeApi.refundElsewhere(intent, 1300);
    const page = await con.signedIn();
    await page.goto(`${con.stack.api.url}/console/orders/${orderId}`);
    await fill(page, "textbox", "Note", "Customer asked by phone");
    await click(page, "button", "Refund");
    await sees(page, "Not made");
    await sees(page, "has already been refunded");
    await page.close();
  });
});

import { notificationKey } from "@commerce/shared/contract/messages";
import { signPayload } from "@commerce/shared/contract/signature";
import { webhookSecret } from "@commerce/testing/basics";
import {
  adyenBatch,
  adyenItem,
  basicAuth,
  paymentIntent,
  refundedCharge,
  signedItem,
  stripeBody,
  stripeEvent,
  stripeSignature,
} from "@commerce/testing/provider-requests";
import type { Placed } from "./customers";
import { random } from "./random";
import type { SentNotification, Stats } from "./stats";
import type { ChaosSystem } from "./system";

type Provider = SentNotification["provider"];
type Kind = SentNotification["kind"];

/** One notification as its provider sends it: path, headers and body, signed afresh per attempt. */
type Prepared = {
  key: string;
  path: string;
  body: string;
  headers: () => Promise<Record<string, string>>;
};

const providers: Provider[] = ["generic", "stripe", "adyen"];

function prepare(provider: Provider, kind: Kind, order: Placed, paymentRef: string): Prepared {
  const { orderId, amount, currency } = order;
  if (provider === "generic") {
    const id = `evt_${crypto.randomUUID()}`;
    const event = kind === "refund" ? "payment.refunded" : "payment.succeeded";
    const body = JSON.stringify({ event, order_id: orderId, amount, currency, id });
    return {
      key: notificationKey("generic", id),
      path: "/api/webhooks/payment",
      body,
      headers: async () => ({
        "content-type": "application/json",
        "x-signature": signPayload(body, webhookSecret, Math.floor(Date.now() / 1000)),
      }),
    };
  }
  if (provider === "stripe") {
    const object =
      kind === "refund"
        ? refundedCharge(orderId, paymentRef, {
            amount,
            amount_refunded: amount,
            currency: currency.toLowerCase(),
          })
        : paymentIntent(orderId, {
            id: paymentRef,
            amount,
            amount_received: amount,
            currency: currency.toLowerCase(),
          });
    const event = stripeEvent(
      kind === "refund" ? "charge.refunded" : "payment_intent.succeeded",
      object,
    );
    const body = stripeBody(event);
    return {
      key: notificationKey("stripe", event.id),
      path: "/api/webhooks/stripe",
      body,
      headers: async () => ({
        "content-type": "application/json; charset=utf-8",
        "stripe-signature": await stripeSignature(body),
      }),
    };
  }
  const item = signedItem(
    adyenItem(orderId, {
      amount: { currency, value: amount },
      ...(kind === "refund"
        ? { eventCode: "REFUND", originalReference: paymentRef }
        : { pspReference: paymentRef }),
    }),
  );
  const body = JSON.stringify(adyenBatch([item]));
  return {
    key: notificationKey("adyen", `adyen:${item.eventCode}:${item.pspReference}:true`),
    path: "/api/webhooks/adyen",
    body,
    headers: async () => ({ "content-type": "application/json", authorization: basicAuth() }),
  };
}

/** The api's answer to a refund request, as `ApiClient.call` gives it. */
type RefundAsk = (
  orderId: number,
  body: { amount?: number; note: string },
) => Promise<{ status: number; json: { refund_id?: number; amount?: number } }>;

/** Paid orders of these providers are refunded through the api (F1), the rest by notification. */
const refundedThroughApi = (provider: Provider): provider is "stripe" | "adyen" =>
  provider !== "generic";

/** X5 (v5): orders kept unpaid for the lost-messages fault, at most this many, this young. */
const poolSize = 6;
const poolMaxAgeMs = 40_000;

/**
 * X5: the payment providers: each paid order is paid through one of the three (in turn); a
 * non-2xx answer or a lost connection is retried with back-off (honouring Retry-After) for up to
 * three minutes. Some accepted notifications are sent again (duplicates, W5), some orders are
 * refunded afterwards, and a few are paid a second time under a new id (a review, L2).
 *
 * (v5) A Stripe or Adyen payment is first made at the local provider server (a PaymentIntent, an
 * Adyen payment), so the shop can refund it there: about a fifth of those orders are refunded
 * through `POST /api/orders/{id}/refunds` (F1): all at once, a part, or a part and then the rest,
 * and now and then two full refunds at once (one must be refused 409). Orders paid through the
 * generic provider are refunded by its `payment.refunded` notification as before. A few orders
 * are kept unpaid in a pool (young enough not to expire), for the lost-messages fault to pay
 * while the api is paused. 5% of Stripe and Adyen payments are never notified at all: only
 * reconciliation tells payments of them (B1: Stripe's object sweep, every
 * RECONCILE_INTERVAL_SECONDS; Adyen's payment accounting report, `AdyenReporting`).
 */
export class Providers {
  private turn = 0;
  inFlight = 0;
  private readonly pool: { order: Placed; at: number }[] = [];

  constructor(
    private readonly system: ChaosSystem,
    private readonly stats: Stats,
    private readonly askRefund: RefundAsk,
    private readonly orderStatus: (orderId: number) => Promise<string | undefined>,
  ) {}

  private async attempt(prepared: Prepared): Promise<number | "connection error"> {
    try {
      const response = await fetch(`${this.system.payments.url}${prepared.path}`, {
        method: "POST",
        headers: await prepared.headers(),
        body: prepared.body,
        signal: AbortSignal.timeout(10_000),
      });
      await response.arrayBuffer();
      return response.status;
    } catch {
      return "connection error";
    }
  }

  /** Sends until a 2xx (or three minutes); records what it came to. */
  private async deliver(prepared: Prepared, sent: SentNotification): Promise<boolean> {
    const deadline = Date.now() + 180_000;
    for (let n = 0; Date.now() < deadline; n++) {
      const status = await this.attempt(prepared);
      sent.attempts++;
      this.stats.count("payments", status);
      if (typeof status === "number" && status < 300) {
        sent.status = status;
        sent.acceptedAt = Date.now();
        return true;
      }
      sent.status = status;
      await Bun.sleep(Math.min(3_000, 100 * 2 ** n) * (0.5 + random() / 2));
    }
    sent.status = "gave up";
    return false;
  }

  private async send(
    provider: Provider,
    kind: Kind,
    order: Placed,
    ref: string,
    again = false,
    onAccepted?: () => void,
  ) {
    const prepared = prepare(provider, kind, order, ref);
    const sent: SentNotification = {
      provider,
      key: prepared.key,
      orderId: order.orderId,
      kind,
      duplicate: false,
      attempts: 0,
      status: "gave up",
    };
    this.stats.notifications.push(sent);
    const accepted = await this.deliver(prepared, sent);
    if (accepted) onAccepted?.();
    if (accepted && again) {
      // W5: the same notification once more, as a provider that missed the answer would.
      const repeat: SentNotification = { ...sent, duplicate: true, attempts: 0, status: "gave up" };
      this.stats.notifications.push(repeat);
      await this.deliver(prepared, repeat);
    }
    return accepted;
  }

  /**
   * An order the customer pays: most are paid now; a few wait in the pool (while it has room)
   * for the lost-messages fault. Orders that waited too long are paid now.
   */
  accept(order: Placed): void {
    const now = Date.now();
    while (this.pool.length && now - this.pool[0].at > poolMaxAgeMs)
      void this.pay((this.pool.shift() as { order: Placed }).order);
    if (this.pool.length < poolSize && random() < 0.06) this.pool.push({ order, at: now });
    else void this.pay(order);
  }

  /**
   * X5 (v5): pays up to `count` pooled orders now (no repeats, refunds or second payments) and
   * answers once payments has accepted each: their messages are then in the payments stream.
   */
  async payPooled(count: number): Promise<number> {
    const taken = this.pool.splice(-count);
    const accepted = await Promise.all(taken.map(({ order }) => this.pay(order, false)));
    return accepted.filter(Boolean).length;
  }

  /** Whatever is left in the pool, paid (the workload is over). */
  flushPool(): void {
    for (const { order } of this.pool.splice(0)) void this.pay(order);
  }

  /**
   * Pays one order, answering whether payments accepted the payment; with `extras`, perhaps
   * repeats, refunds or pays it twice afterwards, in the background.
   */
  pay(order: Placed, extras = true): Promise<boolean> {
    const provider = providers[this.turn++ % providers.length];
    const ref =
      provider === "stripe"
        ? `pi_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`
        : String(Math.floor(random() * 9e15) + 1e15);
    // The payment the provider holds, so a refund of it can be asked for (F2).
    if (provider === "stripe")
      this.system.stripeApi.paymentIntent(order.amount, order.currency, order.orderId, ref);
    if (provider === "adyen")
      this.system.adyenApi.payment(order.amount, order.currency, order.orderId, ref);
    const again = extras && random() < 0.1;
    // B1: 5% of Stripe and Adyen payments are never notified (an event Stripe never created or
    // never delivered; an endpoint whose queue Adyen holds back).
    const unnotified = extras && provider !== "generic" && random() < 0.05;
    const fate = extras ? random() : 1;
    this.inFlight++;
    let paid!: (accepted: boolean) => void;
    const accepted = new Promise<boolean>((resolve) => {
      paid = resolve;
    });
    void (async () => {
      try {
        let ok = false;
        try {
          if (unnotified) {
            // B1: the provider took the payment, its notification never comes; Stripe's object
            // sweep or Adyen's report must say it.
            this.stats.unnotified.push({ provider, orderId: order.orderId, ref });
            ok = true;
          }
          // Accepted once the first delivery is (a repeat may still be on its way).
          // (A second payment of such an order would pay it first: none is sent.)
          else ok = await this.send(provider, "payment", order, ref, again, () => paid(true));
        } finally {
          paid(ok);
        }
        if (!ok) return;
        if (refundedThroughApi(provider) && fate < 0.2)
          await this.refundThroughApi(provider, order, ref, fate);
        else if (!refundedThroughApi(provider) && fate < 0.1) {
          await Bun.sleep(500 + random() * 2_000);
          await this.send(provider, "refund", order, ref);
        } else if (fate >= 0.2 && fate < 0.23 && !unnotified) {
          const other =
            provider === "stripe"
              ? `pi_${crypto.randomUUID().slice(0, 8)}`
              : String(Math.floor(random() * 9e15) + 1e15);
          await this.send(provider, "second payment", order, other);
        }
      } finally {
        this.inFlight--;
      }
    })();
    return accepted;
  }

  /**
   * F1: refunds a paid order through the api once it is paid there: all of it (half of them), a
   * part (a quarter), a part and then the rest (a sixth), or two full refunds at once (the rest:
   * one is 202, the other 409, F1 "also under concurrent requests").
   */
  private async refundThroughApi(
    provider: "stripe" | "adyen",
    order: Placed,
    paymentRef: string,
    fate: number,
  ): Promise<void> {
    const deadline = Date.now() + 120_000;
    await Bun.sleep(500 + random() * 2_000);
    while ((await this.orderStatus(order.orderId)) !== "paid") {
      if (Date.now() > deadline) return;
      await Bun.sleep(1_000);
    }
    const share = fate / 0.2;
    const part = Math.max(1, Math.floor(order.amount * (0.2 + random() * 0.6)));
    const ask = async (kind: "full" | "partial" | "rest", amount?: number) => {
      const answer = await this.askRefund(order.orderId, {
        ...(amount === undefined ? {} : { amount }),
        note: `chaos ${kind} refund`,
      });
      this.stats.refundAnswers.set(
        String(answer.status),
        (this.stats.refundAnswers.get(String(answer.status)) ?? 0) + 1,
      );
      if (answer.status === 202 && answer.json.refund_id !== undefined)
        this.stats.refunds.push({
          refundId: Number(answer.json.refund_id),
          orderId: order.orderId,
          provider,
          paymentRef,
          amount: Number(answer.json.amount),
          orderAmount: order.amount,
          kind,
          requestedAt: Date.now(),
        });
      return answer.status;
    };
    if (share < 0.5) await ask("full");
    else if (share < 0.75) await ask("partial", part);
    else if (share < 0.92) {
      if ((await ask("partial", part)) !== 202) return;
      await Bun.sleep(1_000 + random() * 5_000);
      await ask("rest");
    } else await Promise.all([ask("full"), ask("full")]);
  }
}

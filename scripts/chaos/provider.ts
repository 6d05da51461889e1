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

/**
 * X5: the payment providers: each paid order is paid through one of the three (in turn); a
 * non-2xx answer or a lost connection is retried with back-off (honouring Retry-After) for up to
 * three minutes. Some accepted notifications are sent again (duplicates, W5), some orders are
 * refunded afterwards, and a few are paid a second time under a new id (a review, L2).
 */
export class Providers {
  private turn = 0;
  inFlight = 0;

  constructor(
    private readonly system: ChaosSystem,
    private readonly stats: Stats,
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

  private async send(provider: Provider, kind: Kind, order: Placed, ref: string, again = false) {
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
    if (accepted && again) {
      // W5: the same notification once more, as a provider that missed the answer would.
      const repeat: SentNotification = { ...sent, duplicate: true, attempts: 0, status: "gave up" };
      this.stats.notifications.push(repeat);
      await this.deliver(prepared, repeat);
    }
    return accepted;
  }

  /** Pays one order (and perhaps repeats, refunds or pays it twice), in the background. */
  pay(order: Placed): void {
    const provider = providers[this.turn++ % providers.length];
    const ref =
      provider === "stripe"
        ? `pi_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`
        : String(Math.floor(random() * 9e15) + 1e15);
    this.inFlight++;
    void (async () => {
      try {
        const paid = await this.send(provider, "payment", order, ref, random() < 0.1);
        if (!paid) return;
        const fate = random();
        if (fate < 0.1) {
          await Bun.sleep(500 + random() * 2_000);
          await this.send(provider, "refund", order, ref);
        } else if (fate < 0.13) {
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
  }
}

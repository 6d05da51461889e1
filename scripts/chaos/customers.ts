import { signToken } from "@commerce/testing/basics";
import { random } from "./random";
import type { Stats } from "./stats";
import type { ChaosSystem } from "./system";

/** An answer's JSON, read by field (a product's id, an order's amount). */
// biome-ignore lint/suspicious/noExplicitAny: the api's documents, typed by its OpenAPI, not here
type Json = any;

export type Placed = { orderId: number; amount: number; currency: string; productId: number };

/**
 * X5: the api as its clients use it: each request to one replica or the other, and on 503, 5xx
 * or a refused connection tried again (the same Idempotency-Key, so a lost answer never places
 * a second order) with back-off, up to `withinMs`.
 */
export class ApiClient {
  private next = 0;
  constructor(
    private readonly system: ChaosSystem,
    private readonly stats: Stats,
  ) {}

  async call(
    method: string,
    path: string,
    token: string,
    body?: unknown,
    withinMs = 60_000,
  ): Promise<{ status: number; json: Json }> {
    const key = crypto.randomUUID();
    const deadline = Date.now() + withinMs;
    for (let n = 0; ; n++) {
      const api = this.system.apis[this.next++ % this.system.apis.length];
      let status: number | "connection error";
      let json: Json;
      try {
        const response = await fetch(`${api.url}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            "content-type": "application/json",
            "idempotency-key": key,
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(10_000),
        });
        status = response.status;
        json = await response.json().catch(() => ({}));
      } catch {
        status = "connection error";
      }
      this.stats.count("api", status);
      const retry =
        status === "connection error" ||
        status >= 500 ||
        (status === 409 && json?.type?.includes?.("idempotency"));
      if (!retry || Date.now() > deadline)
        return { status: typeof status === "number" ? status : 0, json };
      await Bun.sleep(Math.min(2_000, 100 * 2 ** n) * (0.5 + random() / 2));
    }
  }
}

/**
 * Customers placing orders: most of an untracked product, some of the tracked ones (limited
 * stock, so some are refused once it runs out); a few cancel, a few leave theirs unpaid to expire
 * (L3); the rest go to `pay`.
 */
export async function runCustomers(options: {
  client: ApiClient;
  stats: Stats;
  tracked: number[];
  untracked: number[];
  until: () => boolean;
  pay: (order: Placed) => void;
  concurrency: number;
}) {
  const { client, stats, tracked, untracked, until, pay } = options;
  const customers = await Promise.all(
    Array.from({ length: 20 }, (_, i) => signToken(`chaos-customer-${i}`)),
  );
  const pick = <T>(list: T[]) => list[Math.floor(random() * list.length)];
  const customer = async () => {
    while (!until()) {
      const token = pick(customers);
      const isTracked = random() < 0.4;
      const productId = pick(isTracked ? tracked : untracked);
      const qty = 1 + Math.floor(random() * 2);
      const placed = await client.call("POST", "/api/orders", token, {
        product_id: productId,
        qty,
      });
      if (placed.status === 201 || placed.status === 200) {
        stats.ordersPlaced++;
        const order: Placed = {
          orderId: placed.json.order_id,
          amount: placed.json.amount,
          currency: placed.json.currency,
          productId,
        };
        const fate = random();
        if (fate < 0.08) {
          const cancel = await client.call("PATCH", `/api/orders/${order.orderId}`, token, {
            status: "cancelled",
          });
          if (cancel.status === 200) stats.ordersCancelled++;
        } else if (fate < 0.13) stats.ordersLeftUnpaid++;
        else pay(order);
      } else if (placed.status === 409 || placed.status === 422) stats.ordersRefusedNoStock++;
      else stats.placeFailed++;
      await Bun.sleep(150 + random() * 250);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, customer));
}

import { signPayload } from "@commerce/shared/contract/signature";
import { webhookSecret } from "@commerce/testing/basics";

export type Attempt = {
  status: number | "connection error";
  duplicate: boolean;
  contentType?: string | null;
  retryAfter?: number;
};

export type Delivery = {
  body: { id: string; order_id: number };
  accepted: boolean;
  /** The 200 said `duplicate: true`: an earlier attempt was stored though its answer was lost. */
  duplicate: boolean;
  attempts: Attempt[];
};

/**
 * The payment provider as the fault tests play it: every notification signed afresh on each
 * attempt with an explicit id, and retried with back-off (honouring Retry-After) after any non-2xx
 * answer or connection error, within a bounded number of attempts and time. It counts every
 * request it sends.
 */
export class Provider {
  requests = 0;

  constructor(
    private readonly url: string,
    private readonly secret = webhookSecret,
  ) {}

  /** One signed POST; a refused or cut connection is an answer too. */
  async attempt(body: object, timeoutMs = 5_000): Promise<Attempt> {
    const raw = JSON.stringify(body);
    this.requests++;
    try {
      const response = await fetch(`${this.url}/api/webhooks/payment`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-signature": signPayload(raw, this.secret, Math.floor(Date.now() / 1000)),
        },
        body: raw,
        signal: AbortSignal.timeout(timeoutMs),
      });
      const json = (await response.json().catch(() => ({}))) as { duplicate?: boolean };
      const retryAfter = Number(response.headers.get("retry-after"));
      return {
        status: response.status,
        duplicate: response.status === 200 && json.duplicate === true,
        contentType: response.headers.get("content-type"),
        ...(retryAfter > 0 ? { retryAfter } : {}),
      };
    } catch {
      return { status: "connection error", duplicate: false };
    }
  }

  /** Retries until a 2xx, `maxAttempts` or `withinMs`, whichever comes first. */
  async deliver(
    body: Delivery["body"],
    { maxAttempts = 30, withinMs = 60_000 } = {},
  ): Promise<Delivery> {
    const deadline = Date.now() + withinMs;
    const attempts: Attempt[] = [];
    for (let n = 0; n < maxAttempts && Date.now() < deadline; n++) {
      const attempt = await this.attempt(body);
      attempts.push(attempt);
      if (typeof attempt.status === "number" && attempt.status < 300)
        return { body, accepted: true, duplicate: attempt.duplicate, attempts };
      const backoff = Math.min(1_000, 50 * 2 ** n) * (0.5 + Math.random() / 2);
      const wait = attempt.retryAfter ? Math.min(attempt.retryAfter * 1000, 2_000) : backoff;
      await Bun.sleep(Math.max(0, Math.min(wait, deadline - Date.now())));
    }
    return { body, accepted: false, duplicate: false, attempts };
  }

  /** Delivers every body with at most `concurrency` in flight, in order of the list. */
  async deliverAll(
    bodies: Delivery["body"][],
    concurrency: number,
    options: { maxAttempts?: number; withinMs?: number; onAnswer?: (d: Delivery) => void } = {},
  ): Promise<Delivery[]> {
    const deliveries: Delivery[] = new Array(bodies.length);
    let next = 0;
    const worker = async () => {
      while (next < bodies.length) {
        const index = next++;
        deliveries[index] = await this.deliver(bodies[index], options);
        options.onAnswer?.(deliveries[index]);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, bodies.length) }, worker));
    return deliveries;
  }
}

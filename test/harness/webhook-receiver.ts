import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

/** One request the receiver took, as it arrived, and whether the secret's signature verifies. */
export type Received = {
  at: number;
  id: string;
  timestamp: string;
  signature: string;
  headers: IncomingMessage["headers"];
  body: string;
  json: { type: string; timestamp: string; data: Record<string, any> };
};

/**
 * How the receiver answers one request: a status (with a body, text or bytes), after a delay;
 * `endless` sends the status and then body bytes until the client goes away; `hang` never
 * answers; `hangUp` closes the connection without answering.
 */
export type Answer =
  | {
      status: number;
      body?: string | Uint8Array;
      delayMs?: number;
      headers?: Record<string, string>;
      endless?: boolean;
    }
  | { hang: true }
  | { hangUp: true };

/**
 * A real HTTP receiver on loopback for the webhook tests: records every request and answers as
 * `answer` says (200 by default), so a test scripts 500s, a 410, slowness, a hang-up or a hang.
 */
export async function startWebhookReceiver(
  answer: (request: Received, n: number) => Answer = () => ({ status: 200 }),
) {
  const received: Received[] = [];
  let script = answer;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", async () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const request: Received = {
        at: Date.now(),
        id: String(req.headers["webhook-id"]),
        timestamp: String(req.headers["webhook-timestamp"]),
        signature: String(req.headers["webhook-signature"]),
        headers: req.headers,
        body,
        json: JSON.parse(body),
      };
      received.push(request);
      const reply = script(request, received.length);
      if ("hang" in reply) return;
      if ("hangUp" in reply) {
        req.socket.destroy();
        return;
      }
      if (reply.delayMs) await Bun.sleep(reply.delayMs);
      res.writeHead(reply.status, reply.headers ?? {});
      if (reply.endless) {
        // H9: 64 KiB of NUL-laced bytes at a time, for as long as the client keeps reading.
        const chunk = new Uint8Array(64 * 1024).map((_, i) => (i % 3 === 0 ? 0 : 0x41 + (i % 26)));
        const more = () => {
          while (!res.destroyed && res.write(chunk));
        };
        res.on("drain", more);
        more();
        return;
      }
      res.end(reply.body ?? "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    /** Changes how later requests are answered. */
    answer(next: (request: Received, n: number) => Answer) {
      script = next;
    },
    /** The requests about one order, in the order they arrived. */
    forOrder: (orderId: number) => received.filter((r) => r.json.data?.order_id === orderId),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type WebhookReceiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

/** H2: what the Standard Webhooks library says of a delivery under `secret` (throws if wrong). */
export function verifyDelivery(secret: string, request: Received) {
  return new Webhook(secret).verify(request.body, {
    "webhook-id": request.id,
    "webhook-timestamp": request.timestamp,
    "webhook-signature": request.signature,
  });
}

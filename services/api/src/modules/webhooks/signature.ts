import { createHmac, randomBytes } from "node:crypto";

const prefix = "whsec_";

/** H1: a new endpoint secret, `whsec_` and the base64 of 32 random bytes. */
export const newSecret = () => `${prefix}${randomBytes(32).toString("base64")}`;

/**
 * H2, the Standard Webhooks scheme: `v1,` and the base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`
 * under the secret's decoded bytes; with two secrets (after a rotation) both, space-separated.
 */
export function signDelivery(
  secrets: string[],
  id: string,
  timestamp: number,
  body: string,
): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.slice(prefix.length), "base64");
      const mac = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
      return `v1,${mac}`;
    })
    .join(" ");
}

/** What a delivery carries, whoever sends it: the dispatcher, or an admin's retry. */
export type DeliveryContent = {
  message_id: string;
  event_type: string;
  /** ISO 8601: the body's `timestamp`. */
  created_at: string;
  payload: unknown;
};

/** H2: the body and the three Standard Webhooks headers of one attempt, signed now. */
export function signedDelivery(delivery: DeliveryContent, secrets: string[]) {
  const timestamp = Math.floor(Date.now() / 1000);
  const body = JSON.stringify({
    type: delivery.event_type,
    timestamp: delivery.created_at,
    data: delivery.payload,
  });
  const headers = {
    "webhook-id": delivery.message_id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signDelivery(secrets, delivery.message_id, timestamp, body),
  };
  return { body, headers };
}

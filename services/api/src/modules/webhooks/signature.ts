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

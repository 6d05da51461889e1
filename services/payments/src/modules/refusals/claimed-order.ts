import { parseJsonBytes } from "@commerce/shared/platform/http/body";
import type { PaymentProvider } from "../providers/provider";

/**
 * V4: the order a refused request claims to be about, when its body parses (a refusal's example
 * names it, so an operator asking about an order sees the payments refused for it). The body is
 * read no further than its order reference, and nothing of it is kept.
 */
export function claimedOrderId(
  provider: PaymentProvider,
  rawBody: Uint8Array | undefined,
): number | null {
  if (!rawBody) return null;
  const value = parseJsonBytes(rawBody)?.value;
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  try {
    return provider.claimedOrder(value);
  } catch {
    return null;
  }
}

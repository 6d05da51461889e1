import { afterAll } from "bun:test";
import { type ServiceProcess, startStack } from "./processes";
import { adyenRequest, providersEnv, stripeRequest } from "./provider-requests";

/** What a provider's request to a running payments service was answered: its status and body. */
export type Delivered = { status: number; text: string };

/**
 * Both services as processes with Stripe and Adyen on (`providersEnv`), for the calling test file,
 * stopped after its tests; and the providers' own requests (built for the in-process app by
 * provider-requests.ts, signed by their own libraries) sent to the running payments service.
 */
export async function providerStackForFile() {
  const stack = await startStack({ env: providersEnv });
  afterAll(() => stack.stop());

  /** A request built for the in-process app, sent to the running payments (or `to`) instead. */
  async function deliver(
    request: Request | Promise<Request>,
    to: ServiceProcess = stack.payments,
  ): Promise<Delivered> {
    const built = await request;
    const response = await fetch(`${to.url}${new URL(built.url).pathname}`, {
      method: "POST",
      headers: built.headers,
      body: await built.text(),
    });
    return { status: response.status, text: await response.text() };
  }

  return {
    stack,
    deliver,
    /** A Stripe event, signed as Stripe signs it (stripeRequest), to payments (or `to`). */
    stripe: (event: Parameters<typeof stripeRequest>[0], to?: ServiceProcess) =>
      deliver(stripeRequest(event), to),
    /** An Adyen batch, with Adyen's Basic credentials (adyenRequest), to payments (or `to`). */
    adyen: (batch: Parameters<typeof adyenRequest>[0], to?: ServiceProcess) =>
      deliver(adyenRequest(batch), to),
  };
}

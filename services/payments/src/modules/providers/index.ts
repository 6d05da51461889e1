import type { Static, TObject } from "@sinclair/typebox";
import { type AdyenSettings, adyen } from "./adyen";
import { generic } from "./generic";
import type { PaymentProvider, WebhookSettings } from "./provider";
import { type StripeSettings, stripe } from "./stripe";

/** G1: the providers one configures; each is off (its route 404) until its secrets are set. */
export type ProviderSettings = { stripe?: StripeSettings; adyen?: AdyenSettings };

/** The variables of the optional providers, part of the payments service's schema. */
export const providerVariables = { ...stripe.variables, ...adyen.variables };

/** Each optional provider's settings from the parsed variables (a one-line ConfigError when wrong). */
export const providerSettings = (
  vars: Static<TObject<typeof providerVariables>>,
): ProviderSettings => ({
  stripe: stripe.settingsFrom(vars),
  adyen: adyen.settingsFrom(vars),
});

/** The providers this service answers for: generic always, the others when configured. */
export function providersOf(
  webhook: WebhookSettings,
  settings: ProviderSettings,
): PaymentProvider[] {
  const tolerance = webhook.toleranceSeconds;
  return [
    generic.create(webhook),
    settings.stripe && stripe.create(settings.stripe, tolerance),
    settings.adyen && adyen.create(settings.adyen, tolerance),
  ].filter((provider) => provider !== undefined);
}

import { Var } from "@commerce/shared/platform/env";
import type { Static, TObject } from "@sinclair/typebox";
import { type AdyenSettings, adyen } from "./adyen";
import { generic } from "./generic";
import {
  type PaymentMode,
  type PaymentProvider,
  paymentModes,
  type WebhookSettings,
} from "./provider";
import { type StripeSettings, stripe } from "./stripe";

/** G1: the providers one configures; each is off (its route 404) until its secrets are set. */
export type ProviderSettings = {
  /** G4: whose money moves orders; test unless set. */
  mode?: PaymentMode;
  stripe?: StripeSettings;
  adyen?: AdyenSettings;
};

/** The variables of the optional providers, part of the payments service's schema. */
export const providerVariables = {
  PAYMENT_MODE: Var.oneOf(paymentModes, {
    default: "test",
    description:
      "G4: live or test: a Stripe event or an Adyen batch of the other mode is stored without a message",
  }),
  ...stripe.variables,
  ...adyen.variables,
};

/** Each optional provider's settings from the parsed variables (a one-line ConfigError when wrong). */
export const providerSettings = (
  vars: Static<TObject<typeof providerVariables>>,
): ProviderSettings => ({
  mode: vars.PAYMENT_MODE,
  stripe: stripe.settingsFrom(vars),
  adyen: adyen.settingsFrom(vars),
});

/** The providers this service answers for: generic always, the others when configured. */
export function providersOf(
  webhook: WebhookSettings,
  settings: ProviderSettings,
): PaymentProvider[] {
  const context = { toleranceSeconds: webhook.toleranceSeconds, mode: settings.mode ?? "test" };
  return [
    generic.create(webhook),
    settings.stripe && stripe.create(settings.stripe, context),
    settings.adyen && adyen.create(settings.adyen, context),
  ].filter((provider) => provider !== undefined);
}

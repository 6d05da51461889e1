import { Var } from "@commerce/shared/platform/env";
import type { Static, TObject } from "@sinclair/typebox";
import { type AdyenSettings, adyen } from "./adyen";
import {
  type AdyenApiSettings,
  adyenApiSettings,
  adyenApiVariables,
  adyenRefunds,
} from "./adyen/refunds";
import {
  type AdyenReportSettings,
  adyenReportSettings,
  adyenReportVariables,
} from "./adyen/report";
import { generic } from "./generic";
import {
  type PaymentMode,
  type PaymentProvider,
  paymentModes,
  type ReconcileClient,
  type RefundClient,
  type WebhookSettings,
} from "./provider";
import { type StripeSettings, stripe } from "./stripe";
import { stripeReconciler } from "./stripe/reconcile";
import {
  type StripeApiSettings,
  stripeApiSettings,
  stripeApiVariables,
  stripeRefunds,
} from "./stripe/refunds";

/** G1: the providers one configures; each is off (its route 404) until its secrets are set. */
export type ProviderSettings = {
  /** G4: whose money moves orders; test unless set. */
  mode?: PaymentMode;
  stripe?: StripeSettings;
  adyen?: AdyenSettings;
  /** F2: the providers' APIs the shop refunds through; a provider without its key makes none. */
  api?: { stripe?: StripeApiSettings; adyen?: AdyenApiSettings };
  /** B1: where and as whom Adyen's reports are downloaded; unset, they are never downloaded. */
  adyenReports?: AdyenReportSettings;
};

/** The variables of the optional providers, part of the payments service's schema. */
export const providerVariables = {
  PAYMENT_MODE: Var.oneOf(paymentModes, {
    default: "test",
    description:
      "G4: live or test: a Stripe event or an Adyen batch of the other mode is stored without a message",
  }),
  ...stripe.variables,
  ...stripeApiVariables,
  ...adyen.variables,
  ...adyenApiVariables,
  ...adyenReportVariables,
};

/** Each optional provider's settings from the parsed variables (a one-line ConfigError when wrong). */
export const providerSettings = (
  vars: Static<TObject<typeof providerVariables>>,
): ProviderSettings => ({
  mode: vars.PAYMENT_MODE,
  stripe: stripe.settingsFrom(vars),
  adyen: adyen.settingsFrom(vars),
  api: {
    stripe: stripeApiSettings(vars, vars.PAYMENT_MODE),
    adyen: adyenApiSettings(vars, adyen.settingsFrom(vars)?.merchantAccounts, vars.PAYMENT_MODE),
  },
  adyenReports: adyenReportSettings(vars, vars.ADYEN_HMAC_KEYS !== undefined),
});

/** F2, F7: a client of each provider API that has its key, each call bounded by `timeoutMs`. */
export function refundClientsOf(
  settings: ProviderSettings,
  timeoutMs: number,
): Map<string, RefundClient> {
  const clients = new Map<string, RefundClient>();
  if (settings.api?.stripe) clients.set("stripe", stripeRefunds(settings.api.stripe, timeoutMs));
  if (settings.api?.adyen) clients.set("adyen", adyenRefunds(settings.api.adyen, timeoutMs));
  return clients;
}

/** B1: a reconciliation client of each provider whose API can be listed (Stripe), calls bounded. */
export function reconcileClientsOf(
  settings: ProviderSettings,
  timeoutMs: number,
): ReconcileClient[] {
  const stripeApi = settings.api?.stripe;
  return stripeApi ? [stripeReconciler(stripeApi, timeoutMs, settings.mode ?? "test")] : [];
}

export { refundKeyOf } from "@commerce/shared/contract/refund-providers";

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

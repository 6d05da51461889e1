import { authConfig } from "@commerce/shared/platform/auth/auth-config";
import { commonSettings, commonVariables } from "@commerce/shared/platform/config";
import { type Env, parseEnv, Var } from "@commerce/shared/platform/env";
import { Type } from "@sinclair/typebox";
import { providerSettings, providerVariables } from "./modules/providers";

/** Every variable the payments service reads: its type, range, default and what it is for. */
export const paymentsEnv = Type.Object({
  ...commonVariables({ port: 3001, ratePerSecond: 100, burst: 200 }),
  PAYMENT_WEBHOOK_SECRETS: Var.list(
    // W2: a short secret can be guessed offline from one signed notification.
    Var.text({ minLength: 16, expected: "at least 16 characters long" }),
    {
      each: "secret",
      secret: true,
      expected: "a comma-separated list of non-empty secrets",
      description: "W2: the notifications' signing secrets; any one may match (rotation)",
    },
  ),
  WEBHOOK_TOLERANCE_SECONDS: Var.integer({
    minimum: 1,
    maximum: 86_400,
    default: 300,
    description: "W2: how far a notification's signed timestamp may be from now",
  }),
  CONSOLE_ORIGINS: Var.list(Var.origin(), {
    default: [],
    expected: "comma-separated origins like https://shop.example.com (scheme, host, port; no path)",
    description: "U1: origins whose console may read the operator routes (CORS); unset, none",
  }),
  REFUND_GIVE_UP_HOURS: Var.integer({
    minimum: 1,
    maximum: 720,
    default: 24,
    description:
      "F3: hours a refund is asked again (same key) without a definite answer before a refund_unknown review asks a person",
  }),
  ANTI_ENTROPY_INTERVAL_SECONDS: Var.integer({
    minimum: 0,
    maximum: 3600,
    default: 10,
    description:
      "B2: how often payments compares what it published with what the api applied; 0 = off",
  }),
  ANTI_ENTROPY_WINDOW_HOURS: Var.integer({
    minimum: 1,
    maximum: 720,
    default: 24,
    description: "B2: how far back the comparison looks (a trailing window)",
  }),
  ANTI_ENTROPY_GRACE_SECONDS: Var.integer({
    minimum: 1,
    maximum: 3600,
    default: 30,
    description: "B2: how long a published message may take to be applied before it is missing",
  }),
  RECONCILE_INTERVAL_SECONDS: Var.integer({
    minimum: 0,
    maximum: 86_400,
    default: 300,
    description:
      "B1, B4: how often payments reconciles with each provider's API (Stripe's events and objects); 0 = off",
  }),
  ...providerVariables,
});

export type PaymentsConfig = ReturnType<typeof loadConfig>;

export function loadConfig(env: Env) {
  const vars = parseEnv(paymentsEnv, env);
  return {
    ...commonSettings(vars),
    /** U1: the origins whose console may read the operator routes; empty, no CORS at all. */
    consoleOrigins: vars.CONSOLE_ORIGINS,
    /** V3: the operator routes' tokens; undefined when unset, and those routes answer 503. */
    auth: authConfig(vars, { required: false }),
    webhook: {
      secrets: vars.PAYMENT_WEBHOOK_SECRETS,
      toleranceSeconds: vars.WEBHOOK_TOLERANCE_SECONDS,
    },
    providers: providerSettings(vars),
    /** F3: how long a refund without a definite answer is asked again. */
    refundGiveUpMs: vars.REFUND_GIVE_UP_HOURS * 3_600_000,
    /** B1: the provider reconciliation's timer; 0 = off. */
    reconcileIntervalMs: vars.RECONCILE_INTERVAL_SECONDS * 1000,
    antiEntropy: {
      intervalMs: vars.ANTI_ENTROPY_INTERVAL_SECONDS * 1000,
      windowMs: vars.ANTI_ENTROPY_WINDOW_HOURS * 3_600_000,
      graceMs: vars.ANTI_ENTROPY_GRACE_SECONDS * 1000,
    },
  };
}

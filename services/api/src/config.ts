import { authConfig } from "@commerce/shared/platform/auth/auth-config";
import { commonSettings, commonVariables } from "@commerce/shared/platform/config";
import { type Env, parseEnv, Var } from "@commerce/shared/platform/env";
import { Type } from "@sinclair/typebox";

/** Every variable the api reads: its type, range, default and what it is for. */
export const apiEnv = Type.Object({
  ...commonVariables({ port: 3000, ratePerSecond: 50, burst: 100 }),
  STORE_CURRENCY: Var.text({
    default: "USD",
    pattern: "^[A-Z]{3}$",
    expected: "three upper-case letters",
    description: "the one currency of prices and orders",
  }),
  PAYMENTS_PUBLIC_URL: Var.optional(
    Var.url(["http:", "https:"], {
      description: "U1: the payments service's URL as the console's browser reaches it",
    }),
  ),
  ORDER_TTL_SECONDS: Var.integer({
    maximum: 31_536_000,
    default: 1800,
    description: "L3: an unpaid order is cancelled as expired after this; 0 = never",
  }),
  HOLD_MAX_ORDERS: Var.integer({
    maximum: 1_000_000,
    default: 5,
    description: "N5: unpaid orders one customer may hold; 0 = no limit",
  }),
  HOLD_MAX_UNITS: Var.integer({
    maximum: 1_000_000_000,
    default: 10,
    description: "N5: units of one product one customer may hold in unpaid orders; 0 = no limit",
  }),
  WEBHOOK_RETRY_SCHEDULE: Var.list(Var.integer({ maximum: 9_999_999 }), {
    maxItems: 50,
    default: [5, 300, 1800, 7200, 18000, 36000, 36000],
    expected: "up to 50 comma-separated delays in seconds",
    description: "H3: seconds to wait after each failed attempt; after the last, it has failed",
  }),
  WEBHOOK_TIMEOUT_SECONDS: Var.integer({
    minimum: 1,
    maximum: 300,
    default: 15,
    description: "H3: how long one attempt may take",
  }),
  WEBHOOK_DISABLE_AFTER_SECONDS: Var.integer({
    minimum: 1,
    default: 432_000,
    description: "H3: an endpoint failing this long is disabled",
  }),
  OUTBOX_RETENTION_DAYS: Var.integer({
    minimum: 30,
    maximum: 3650,
    default: 30,
    description:
      "H3: days a published order event is kept in the outbox, for replay-missing; at least 30",
  }),
  WEBHOOK_ALLOW_HTTP: Var.boolean({ description: "H7: endpoints may be plain http:// URLs" }),
  WEBHOOK_ALLOW_PRIVATE: Var.boolean({
    description: "H7: endpoints may resolve to private or loopback addresses",
  }),
});

export type ApiConfig = ReturnType<typeof loadConfig>;
export type WebhookConfig = ApiConfig["webhooks"];
/** N5: unpaid orders and units of one tracked product a customer may hold; 0 = no limit. */
export type HoldLimits = ApiConfig["holds"];

export function loadConfig(env: Env) {
  const vars = parseEnv(apiEnv, env);
  return {
    ...commonSettings(vars),
    auth: authConfig(vars, { required: true }),
    storeCurrency: vars.STORE_CURRENCY,
    /** U1: the payments service's URL as a browser reaches it; unset, the console shows no notifications. */
    paymentsPublicUrl: vars.PAYMENTS_PUBLIC_URL,
    orderTtlSeconds: vars.ORDER_TTL_SECONDS,
    /** H3: days published order events stay in the outbox, for replay-missing. */
    outboxRetentionDays: vars.OUTBOX_RETENTION_DAYS,
    /** N5: what one customer may hold unpaid; 0 = no limit. */
    holds: { maxOrders: vars.HOLD_MAX_ORDERS, maxUnits: vars.HOLD_MAX_UNITS },
    /** H3, H7: how outgoing webhooks are retried and where they may go. */
    webhooks: {
      /** Seconds to wait after each failed attempt; after the last, the delivery has failed. */
      retrySchedule: vars.WEBHOOK_RETRY_SCHEDULE,
      timeoutSeconds: vars.WEBHOOK_TIMEOUT_SECONDS,
      disableAfterSeconds: vars.WEBHOOK_DISABLE_AFTER_SECONDS,
      allowHttp: vars.WEBHOOK_ALLOW_HTTP,
      allowPrivate: vars.WEBHOOK_ALLOW_PRIVATE,
    },
  };
}

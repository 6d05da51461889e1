import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { ConfigError, Var } from "@commerce/shared/platform/env";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import {
  CredentialsRejectedError,
  InvalidNotificationError,
  orderIdOf,
  type ParsedNotification,
  type PaymentMode,
  type PaymentProvider,
  type ProviderPlugin,
  parseJsonObject,
  providerBodyLimit,
  SignatureRejectedError,
  schemaErrors,
  storable,
} from "../provider";
import { adyenMoves } from "./events";
import {
  type AdyenBatch,
  adyenAccepted,
  adyenBatch,
  adyenSecurity,
  type NotificationRequestItem,
} from "./model";
import { isPaymentAccountingReport } from "./report";

export type AdyenSettings = {
  hmacKeys: Buffer[];
  /** G4: the shop's merchant accounts; an item of any other moves nothing. */
  merchantAccounts: string[];
  basic: { username: string; password: string } | undefined;
};

const batchSchema = TypeCompiler.Compile(adyenBatch);

type LooseItem = Record<string, unknown> & { amount?: Record<string, unknown> };

const textOf = (value: unknown) =>
  value === undefined || value === null ? "" : typeof value === "string" ? value : String(value);

/** Y1: the signed text, as Adyen's HmacValidator builds it (empty text for an absent field). */
export const signedTextOf = (item: LooseItem) =>
  [
    item.pspReference,
    item.originalReference,
    item.merchantAccountCode,
    item.merchantReference,
    item.amount?.value,
    item.amount?.currency,
    item.eventCode,
    item.success,
  ]
    .map(textOf)
    .join(":");

function itemsOf(rawBody: Uint8Array): LooseItem[] {
  const { value } = parseJsonObject(rawBody);
  const items = (value as { notificationItems?: unknown }).notificationItems;
  if (!Array.isArray(items) || items.length === 0)
    throw new InvalidNotificationError("invalid_schema", "The request body is invalid", [
      { path: "/notificationItems", message: "notificationItems must be a list of 1 to 100 items" },
    ]);
  return items.map((entry) => {
    const item = (entry as { NotificationRequestItem?: unknown } | null)?.NotificationRequestItem;
    return typeof item === "object" && item !== null ? (item as LooseItem) : {};
  });
}

/** Y1: one item's `additionalData.hmacSignature` under any configured key, in constant time. */
function itemVerifies(item: LooseItem, keys: Buffer[]): "ok" | "missing" | "mismatch" {
  const additional = item.additionalData as Record<string, unknown> | undefined;
  const signature = additional?.hmacSignature;
  if (typeof signature !== "string" || signature === "") return "missing";
  const received = Buffer.from(signature, "base64");
  const text = signedTextOf(item);
  let matched = false;
  for (const key of keys) {
    const expected = createHmac("sha256", key).update(text, "utf8").digest();
    matched =
      (received.length === expected.length && timingSafeEqual(expected, received)) || matched;
  }
  return matched ? "ok" : "mismatch";
}

/** Equal-length digests, so comparing them takes the same time whatever the credentials. */
const sameSecret = (a: string, b: string) =>
  timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());

function basicCredentialsMatch(header: string | null, expected: AdyenSettings["basic"] & {}) {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? "");
  if (!match) return false;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return false;
  const userOk = sameSecret(decoded.slice(0, colon), expected.username);
  const passOk = sameSecret(decoded.slice(colon + 1), expected.password);
  return userOk && passOk;
}

/** G4: why a batch's or an item's money is not the shop's; undefined when it is. */
function ignoredOf(
  batch: AdyenBatch,
  item: NotificationRequestItem,
  context: { mode: PaymentMode; merchantAccounts: string[] },
): string | undefined {
  if (batch.live !== String(context.mode === "live"))
    return `live is ${JSON.stringify(batch.live ?? null)}; PAYMENT_MODE is ${context.mode}`;
  if (!context.merchantAccounts.includes(item.merchantAccountCode))
    return `merchantAccountCode ${JSON.stringify(item.merchantAccountCode)} is not in ADYEN_MERCHANT_ACCOUNTS`;
  return undefined;
}

/** B1: the report a REPORT_AVAILABLE item names: its file (pspReference) and URL (`reason`). */
function reportOf(
  item: NotificationRequestItem,
  batch: AdyenBatch,
  context: { mode: PaymentMode; merchantAccounts: string[] },
): ParsedNotification["report"] {
  if (item.eventCode !== "REPORT_AVAILABLE" || item.success !== "true") return undefined;
  const reason = (item as { reason?: unknown }).reason;
  // N9: only text PostgreSQL can store; anything else is no URL (never fetched).
  const url = typeof reason === "string" && reason.length <= 2048 && storable(reason) ? reason : "";
  const report = { fileName: item.pspReference, url };
  if (batch.live !== String(context.mode === "live")) return { ...report, skip: "other_mode" };
  if (!context.merchantAccounts.includes(item.merchantAccountCode))
    return { ...report, skip: "other_merchant_account" };
  if (!isPaymentAccountingReport(item.pspReference))
    return { ...report, skip: "not_payment_accounting" };
  return report;
}

function asParsed(
  item: NotificationRequestItem,
  ignored: string | undefined,
  report: ParsedNotification["report"],
): ParsedNotification {
  const { eventCode, pspReference, success, originalReference, merchantReference, amount } = item;
  const move = adyenMoves.get(`${eventCode}:${success}`);
  return {
    ...(report ? { report } : {}),
    id: `adyen:${eventCode}:${pspReference}:${success}`,
    event: eventCode,
    orderId: orderIdOf(merchantReference ?? null),
    paymentRef: originalReference || pspReference,
    amount: amount.value,
    currency: amount.currency.toUpperCase(),
    message: move?.message,
    stage: move?.stage,
    ignored: move ? ignored : undefined,
  };
}

/** The variables this provider reads, part of the payments service's schema. */
const adyenVariables = {
  ADYEN_HMAC_KEYS: Var.optional(
    Var.list(Var.text({ pattern: "^(?:[0-9a-fA-F]{2}){16,}$" }), {
      secret: true,
      expected:
        "comma-separated hexadecimal HMAC keys from Adyen's Customer Area (at least 32 hex digits each)",
      description: "Y1: Adyen's HMAC keys, any one may match; unset, Adyen's route is 404",
    }),
  ),
  ADYEN_MERCHANT_ACCOUNTS: Var.optional(
    Var.list(Var.text({ minLength: 1 }), {
      expected: "comma-separated merchant account codes, e.g. ShopECOM",
      description:
        "G4: the shop's Adyen merchant accounts; an item of any other is stored without a message. Required with ADYEN_HMAC_KEYS",
    }),
  ),
  ADYEN_WEBHOOK_USERNAME: Var.optional(
    Var.text({ description: "Y1: Basic user Adyen sends; set with ADYEN_WEBHOOK_PASSWORD" }),
  ),
  ADYEN_WEBHOOK_PASSWORD: Var.optional(
    Var.text({ secret: true, description: "Y1: Basic password Adyen sends" }),
  ),
};

/** Section 15, Y1–Y3: Adyen's standard webhooks (JSON), batches of HMAC-signed items. */
export const adyen: ProviderPlugin<AdyenSettings, typeof adyenVariables> = {
  name: "adyen",
  variables: adyenVariables,
  settingsFrom(vars) {
    const keys = vars.ADYEN_HMAC_KEYS;
    const username = vars.ADYEN_WEBHOOK_USERNAME;
    const password = vars.ADYEN_WEBHOOK_PASSWORD;
    const merchantAccounts = vars.ADYEN_MERCHANT_ACCOUNTS;
    if (keys === undefined) {
      if (username !== undefined || password !== undefined || merchantAccounts !== undefined)
        throw new ConfigError(
          "ADYEN_HMAC_KEYS is required when ADYEN_WEBHOOK_USERNAME, ADYEN_WEBHOOK_PASSWORD or ADYEN_MERCHANT_ACCOUNTS is set",
        );
      return undefined;
    }
    // G4: without them any merchant account's signed item would move this shop's orders.
    if (!merchantAccounts?.length)
      throw new ConfigError(
        "ADYEN_MERCHANT_ACCOUNTS is required when ADYEN_HMAC_KEYS is set (the shop's merchant account codes, comma-separated)",
      );
    if ((username === undefined) !== (password === undefined))
      throw new ConfigError(
        `${username === undefined ? "ADYEN_WEBHOOK_USERNAME" : "ADYEN_WEBHOOK_PASSWORD"} must be set with the other one`,
      );
    return {
      hmacKeys: keys.map((key) => Buffer.from(key, "hex")),
      merchantAccounts,
      basic: username && password ? { username, password } : undefined,
    };
  },
  create: ({ hmacKeys, basic, merchantAccounts }, { mode }): PaymentProvider => ({
    name: "adyen",
    path: "/adyen",
    bodyLimit: providerBodyLimit,
    authenticate({ headers, rawBody }) {
      if (basic && !basicCredentialsMatch(headers.get("authorization"), basic))
        throw new CredentialsRejectedError("adyen");
      // Y1: one forged item turns the whole batch away; the items are read for their HMAC only.
      for (const item of itemsOf(rawBody)) {
        const verdict = itemVerifies(item, hmacKeys);
        if (verdict !== "ok") throw new SignatureRejectedError(verdict, "item's hmacSignature");
      }
    },
    parse(rawBody) {
      const { text, value } = parseJsonObject(rawBody);
      const errors = schemaErrors(batchSchema, value);
      if (errors.length)
        throw new InvalidNotificationError("invalid_schema", "The request body is invalid", errors);
      const batch = value as AdyenBatch;
      return {
        text,
        notifications: batch.notificationItems.map(({ NotificationRequestItem: item }) =>
          asParsed(
            item,
            ignoredOf(batch, item, { mode, merchantAccounts }),
            reportOf(item, batch, { mode, merchantAccounts }),
          ),
        ),
      };
    },
    claimedOrder: (body) => {
      const items = (body as { notificationItems?: unknown }).notificationItems;
      const first = Array.isArray(items) ? items[0]?.NotificationRequestItem : undefined;
      return orderIdOf(first?.merchantReference ?? null);
    },
    answer: () => ({ body: "[accepted]", contentType: "text/plain; charset=utf-8" }),
    document: {
      operationId: "receiveAdyenNotifications",
      summary: "Receive an Adyen standard webhook (a batch of notification items)",
      description:
        "Adyen's JSON standard webhook as Adyen sends it. HTTP Basic credentials when " +
        "configured, then every item's additionalData.hmacSignature under ADYEN_HMAC_KEYS " +
        "(401 and nothing stored unless all verify). AUTHORISATION (success true / false), " +
        "REFUND and CANCEL_OR_REFUND (true) move money; NOTIFICATION_OF_CHARGEBACK, CHARGEBACK, " +
        "CHARGEBACK_REVERSED and SECOND_CHARGEBACK make a dispute message; every other item " +
        "is stored, and so is one of a batch whose live is not PAYMENT_MODE's or of a merchant " +
        "account not in ADYEN_MERCHANT_ACCOUNTS, without a message. The order is merchantReference. " +
        "The batch is stored in one transaction; the answer is [accepted]. A REPORT_AVAILABLE item " +
        "naming a payment accounting report (its reason the download URL) is downloaded and " +
        "compared afterwards, never while Adyen waits. 404 when " +
        "ADYEN_HMAC_KEYS is not set.",
      security: adyenSecurity,
      requestSchema: adyenBatch,
      answerSchema: adyenAccepted,
    },
  }),
};

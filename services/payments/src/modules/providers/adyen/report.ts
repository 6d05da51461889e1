import type { DisputeStage, PaymentEvent } from "@commerce/shared/contract/messages";
import { ConfigError, Var } from "@commerce/shared/platform/env";
import { orderIdOf, type ParsedNotification } from "../provider";

/**
 * B1: Adyen's payment accounting report (docs.adyen.com, "Payment accounting report"): a CSV file,
 * a header line naming its columns, then one line per status change of a payment or
 * modification. Columns are read by name (an account may add columns or change their order):
 * `Merchant Account`, `Psp Reference` (the payment's), `Merchant Reference` (the order, as Y2 reads
 * it), `Record Type`, `Main Currency`, `Main Amount` (in major units: `19.99`), `Booking Date`
 * (`Creation Date` in older reports; `YYYY-MM-DD HH:MM:SS` in `TimeZone`), and, when the account
 * added it, `Modification Psp Reference` (the refund's or chargeback's own pspReference).
 */
export type AdyenReportSettings = { username: string; password: string; urlPrefix: string };

/** The variables of Adyen's report download (B1), part of the payments service's schema. */
export const adyenReportVariables = {
  ADYEN_REPORT_USERNAME: Var.optional(
    Var.text({
      minLength: 1,
      description:
        "B1: the report user Adyen's reports are downloaded as (HTTP Basic, e.g. report_123456@Company.Shop); set with ADYEN_REPORT_PASSWORD and ADYEN_REPORT_URL_PREFIX",
    }),
  ),
  ADYEN_REPORT_PASSWORD: Var.optional(
    Var.text({ minLength: 1, secret: true, description: "B1: the report user's password" }),
  ),
  ADYEN_REPORT_URL_PREFIX: Var.optional(
    Var.url(["https:", "http:"], {
      description:
        "B1: a report named by a REPORT_AVAILABLE notification is downloaded only when its URL starts with this (ending with /), e.g. https://ca-test.adyen.com/reports/download/MerchantAccount/ShopECOM/; the credentials go nowhere else",
    }),
  ),
};

/**
 * B1: the report download's settings, undefined when none of the three is set (reports are then
 * stored as notifications and never downloaded). Reports come with REPORT_AVAILABLE notifications,
 * so Adyen's webhook (ADYEN_HMAC_KEYS) must be on.
 */
export function adyenReportSettings(
  vars: {
    ADYEN_REPORT_USERNAME?: string;
    ADYEN_REPORT_PASSWORD?: string;
    ADYEN_REPORT_URL_PREFIX?: string;
  },
  webhookOn: boolean,
): AdyenReportSettings | undefined {
  const username = vars.ADYEN_REPORT_USERNAME;
  const password = vars.ADYEN_REPORT_PASSWORD;
  const urlPrefix = vars.ADYEN_REPORT_URL_PREFIX;
  const names = {
    ADYEN_REPORT_USERNAME: username,
    ADYEN_REPORT_PASSWORD: password,
    ADYEN_REPORT_URL_PREFIX: urlPrefix,
  };
  const unset = Object.entries(names).filter(([, value]) => value === undefined);
  if (unset.length === 3) return undefined;
  if (unset.length > 0)
    throw new ConfigError(
      `${unset.map(([name]) => name).join(" and ")} must be set with the other ADYEN_REPORT_ settings`,
    );
  if (!webhookOn)
    throw new ConfigError(
      "ADYEN_HMAC_KEYS is required with ADYEN_REPORT_URL_PREFIX (reports are announced by REPORT_AVAILABLE notifications)",
    );
  // Without the slash, https://ca-test.adyen.com would also let https://ca-test.adyen.com.evil.example in.
  if (!urlPrefix?.endsWith("/")) throw new ConfigError("ADYEN_REPORT_URL_PREFIX must end with /");
  return {
    username: username as string,
    password: password as string,
    urlPrefix: new URL(urlPrefix).href,
  };
}

/** B1: the URL is under the prefix, compared after normalising it (no `..` climbs out). */
export function underPrefix(url: string, prefix: string): boolean {
  if (!URL.canParse(url)) return false;
  return new URL(url).href.startsWith(prefix);
}

/** B1: the reports this service reads: the payment accounting report, as CSV (daily or interactive). */
export const isPaymentAccountingReport = (fileName: string) =>
  /^payments_accounting_report[A-Za-z0-9_.-]*\.csv$/.test(fileName);

/** What a report line of a record type this service reads does, as the matching notification would. */
type LineMove = {
  /** The Adyen notifications (Y2) whose stored copy explains the line. */
  explainedBy: string[];
  message: PaymentEvent;
  stage?: DisputeStage;
};

/**
 * B1: the record types that move money, as the notification Adyen sends for them (Y2, L5):
 * Authorised ↔ AUTHORISATION success, Refunded ↔ REFUND (or CANCEL_OR_REFUND) success,
 * Chargeback ↔ CHARGEBACK (or SECOND_CHARGEBACK): the money left the shop (a lost dispute).
 */
export const reportMoves = new Map<string, LineMove>([
  ["Authorised", { explainedBy: ["AUTHORISATION"], message: "payment.succeeded" }],
  ["Refunded", { explainedBy: ["REFUND", "CANCEL_OR_REFUND"], message: "payment.refunded" }],
  [
    "Chargeback",
    {
      explainedBy: ["CHARGEBACK", "SECOND_CHARGEBACK"],
      message: "payment.disputed",
      stage: "lost",
    },
  ],
]);

const columns = {
  merchantAccount: "Merchant Account",
  pspReference: "Psp Reference",
  merchantReference: "Merchant Reference",
  recordType: "Record Type",
  currency: "Main Currency",
  amount: "Main Amount",
} as const;

/** Where each column this service reads is in a report's lines. */
export type ReportColumns = Record<keyof typeof columns, number> & {
  bookedAt: number;
  timeZone: number;
  modificationPspReference: number;
  count: number;
};

/** The columns of a report's header line; a string naming what is missing when it is not one. */
export function reportColumnsOf(header: string[]): ReportColumns | string {
  const at = (name: string) => header.findIndex((column) => column.trim() === name);
  const missing = Object.values(columns).filter((name) => at(name) < 0);
  const bookedAt = at("Booking Date") >= 0 ? at("Booking Date") : at("Creation Date");
  if (bookedAt < 0) missing.push("Booking Date" as never);
  if (missing.length) return `the header has no ${missing.join(", ")} column`;
  const found = Object.fromEntries(
    Object.entries(columns).map(([key, name]) => [key, at(name)]),
  ) as Record<keyof typeof columns, number>;
  return {
    ...found,
    bookedAt,
    timeZone: at("TimeZone"),
    modificationPspReference: at("Modification Psp Reference"),
    count: header.length,
  };
}

/** One line of a record type that moves money, read. */
export type ReportLine = {
  line: number;
  recordType: string;
  merchantAccount: string;
  /** The payment's pspReference. */
  pspReference: string;
  /** The modification's own pspReference (a refund's, a chargeback's), when the report has it. */
  modificationPspReference?: string;
  merchantReference: string;
  /** Minor units. */
  amount: number;
  /** Upper-case. */
  currency: string;
  bookedAt?: Date;
};

/** ISO 4217 currencies whose minor unit is not a hundredth. */
const exponents: Record<string, number> = Object.fromEntries([
  ..."BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF"
    .split(" ")
    .map((code) => [code, 0]),
  ..."BHD IQD JOD KWD LYD OMR TND".split(" ").map((code) => [code, 3]),
]);

/** `19.99` (or `-19.99`) in `currency` as minor units, absolute; undefined when it is not an amount. */
export function minorUnits(text: string, currency: string): number | undefined {
  const match = /^-?(\d{1,15})(?:\.(\d{1,3}))?$/.exec(text.trim());
  if (!match) return undefined;
  const exponent = exponents[currency] ?? 2;
  const decimals = (match[2] ?? "").replace(/0+$/, "");
  if (decimals.length > exponent) return undefined;
  const value = Number(match[1]) * 10 ** exponent + Number(decimals.padEnd(exponent, "0") || 0);
  return Number.isSafeInteger(value) ? value : undefined;
}

/** `YYYY-MM-DD HH:MM:SS` in the IANA (or legacy, e.g. CET) zone `zone`; UTC when it names none. */
export function bookedAtOf(text: string, zone: string | undefined): Date | undefined {
  const match = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})$/.exec(text.trim());
  if (!match) return undefined;
  const asUtc = Date.parse(`${match[1]}T${match[2]}Z`);
  if (Number.isNaN(asUtc)) return undefined;
  let offset = 0;
  try {
    if (zone) {
      const parts = new Intl.DateTimeFormat("en-US", {
        timeZone: zone,
        hourCycle: "h23",
        year: "numeric",
        month: "2-digit",
        day: "2-digit",
        hour: "2-digit",
        minute: "2-digit",
        second: "2-digit",
      }).formatToParts(new Date(asUtc));
      const part = (type: string) => Number(parts.find((p) => p.type === type)?.value);
      const there = Date.UTC(
        part("year"),
        part("month") - 1,
        part("day"),
        part("hour"),
        part("minute"),
        part("second"),
      );
      offset = there - asUtc;
    }
  } catch {
    offset = 0;
  }
  return new Date(asUtc - offset);
}

const pspPattern = /^[A-Za-z0-9]{1,64}$/;

/**
 * A line's record, read: undefined for a record type that moves nothing, a string saying why for
 * a malformed one (no pspReference as Adyen writes them, no amount, no currency).
 */
export function reportLineOf(
  fields: string[],
  line: number,
  at: ReportColumns,
): ReportLine | string | undefined {
  if (fields.length !== at.count) return `${fields.length} fields where the header has ${at.count}`;
  const field = (index: number) => (index < 0 ? "" : (fields[index] ?? "").trim());
  const recordType = field(at.recordType);
  if (!reportMoves.has(recordType)) return undefined;
  const pspReference = field(at.pspReference);
  if (!pspPattern.test(pspReference)) return "Psp Reference is not an Adyen pspReference";
  const modification = field(at.modificationPspReference);
  if (modification && !pspPattern.test(modification))
    return "Modification Psp Reference is not an Adyen pspReference";
  const currency = field(at.currency).toUpperCase();
  if (!/^[A-Z]{3}$/.test(currency)) return "Main Currency is not a currency code";
  const amount = minorUnits(field(at.amount), currency);
  if (amount === undefined) return "Main Amount is not an amount";
  const merchantReference = field(at.merchantReference);
  const bookedAt = bookedAtOf(field(at.bookedAt), field(at.timeZone) || undefined);
  return {
    line,
    recordType,
    merchantAccount: field(at.merchantAccount),
    pspReference,
    modificationPspReference: modification || undefined,
    merchantReference,
    amount,
    currency,
    bookedAt,
  };
}

/**
 * B1: the line's own pspReference: a modification's (Refunded, Chargeback) when the report has
 * the column, else the payment's; the notification id is `report:<record type>:<it>` (stored
 * under the key `adyen:report:<record type>:<it>`, G5).
 */
export const lineReference = (line: ReportLine) =>
  line.recordType === "Authorised"
    ? line.pspReference
    : (line.modificationPspReference ?? line.pspReference);

export const lineNotificationId = (line: ReportLine) =>
  `report:${line.recordType}:${lineReference(line)}`;

/** B1: a line as the notification it stands for, processed as Adyen's own would be (Y2, L5). */
export function lineNotification(line: ReportLine): ParsedNotification {
  const move = reportMoves.get(line.recordType);
  return {
    id: lineNotificationId(line),
    event: line.recordType,
    orderId: orderIdOf(line.merchantReference),
    paymentRef: line.pspReference,
    amount: line.amount,
    currency: line.currency,
    message: move?.message,
    stage: move?.stage,
  };
}

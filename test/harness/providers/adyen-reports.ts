import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { adyenBatch, adyenItem, signedItem } from "../provider-requests";
import { adyenMerchantAccount } from "./adyen-api";

export const reportUsername = "report_586231@Company.Shop";
export const reportPassword = "a-long-report-password-31";

/**
 * The standard columns of Adyen's payment accounting report, in Adyen's order (docs.adyen.com,
 * "Payment accounting report", Report structure), and `Modification Psp Reference`, one of the
 * additional columns an account can add (the refund's or chargeback's own pspReference).
 */
export const reportColumns = [
  "Company Account",
  "Merchant Account",
  "Psp Reference",
  "Merchant Reference",
  "Payment Method",
  "Booking Date",
  "TimeZone",
  "Main Currency",
  "Main Amount",
  "Record Type",
  "Payment Currency",
  "Received (PC)",
  "Authorised (PC)",
  "Captured (PC)",
  "Settlement Currency",
  "Payable (SC)",
  "Commission (SC)",
  "Markup (SC)",
  "Scheme Fees (SC)",
  "Interchange (SC)",
  "Processing Fee Currency",
  "Processing Fee (FC)",
  "User Name",
  "Payment Method Variant",
  "Modification Merchant Reference",
  "Modification Psp Reference",
] as const;

/** One line of a report, as a test describes it; amounts in minor units. */
export type ReportLineSpec = {
  recordType: string;
  pspReference: string;
  merchantReference: string | number;
  amount: number;
  currency?: string;
  merchantAccount?: string;
  modificationPspReference?: string;
  bookedAt?: Date;
};

const zeroDecimals = new Set(["JPY", "KRW", "CLP", "ISK", "VND"]);

/** Minor units as the report writes amounts: `19.99`, negative for money leaving. */
const major = (minor: number, currency: string) =>
  zeroDecimals.has(currency) ? String(minor) : (minor / 100).toFixed(2);

/** `YYYY-MM-DD HH:MM:SS` in UTC, the report's Booking Date with TimeZone `UTC`. */
const booked = (at: Date) => at.toISOString().slice(0, 19).replace("T", " ");

const csvField = (value: string) =>
  /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;

/** A report line's fields, by column, as Adyen fills them for its record type. */
function lineFields(spec: ReportLineSpec): Record<string, string> {
  const currency = spec.currency ?? "USD";
  const amount = major(spec.amount, currency);
  const leaving = spec.recordType === "Refunded" || spec.recordType === "Chargeback";
  return {
    "Company Account": "ShopCompany",
    "Merchant Account": spec.merchantAccount ?? adyenMerchantAccount,
    "Psp Reference": spec.pspReference,
    "Merchant Reference": String(spec.merchantReference),
    "Payment Method": "visa",
    "Booking Date": booked(spec.bookedAt ?? new Date()),
    TimeZone: "UTC",
    "Main Currency": currency,
    "Main Amount": amount,
    "Record Type": spec.recordType,
    "Payment Currency": currency,
    "Received (PC)": spec.recordType === "Received" ? amount : "",
    "Authorised (PC)": spec.recordType === "Authorised" ? amount : "",
    "Captured (PC)": leaving ? `-${amount}` : spec.recordType === "SentForSettle" ? amount : "",
    "Settlement Currency": currency,
    "Payable (SC)": "",
    "Commission (SC)": "",
    "Markup (SC)": "",
    "Scheme Fees (SC)": "",
    "Interchange (SC)": "",
    "Processing Fee Currency": "",
    "Processing Fee (FC)": "",
    "User Name": spec.recordType === "Refunded" ? "ws@Company.Shop" : "System",
    "Payment Method Variant": "visacredit",
    "Modification Merchant Reference": leaving ? String(spec.merchantReference) : "",
    "Modification Psp Reference": spec.modificationPspReference ?? "",
  };
}

/** One line of the report's CSV (no line break). */
export const reportLine = (spec: ReportLineSpec) => {
  const fields = lineFields(spec);
  return reportColumns.map((column) => csvField(fields[column] ?? "")).join(",");
};

/** B5: a payment accounting report's CSV in Adyen's format: the header line, one line each. */
export const paymentAccountingReport = (lines: (ReportLineSpec | string)[]) =>
  `${[reportColumns.join(","), ...lines.map((l) => (typeof l === "string" ? l : reportLine(l)))].join("\r\n")}\r\n`;

/** A fault the next download meets. */
export type ReportFault =
  | { kind: "status"; status: number }
  /** The answer is held this long (past the worker's timeout). */
  | { kind: "timeout"; ms: number }
  /** Half the body is sent, then the rest waits until `release()`. */
  | { kind: "stall" };

type Seen = { path: string; authorization: string | null; at: number };

/**
 * A local server that serves report files as Adyen's Customer Area does
 * (`GET /reports/download/MerchantAccount/<account>/<file>`, the report user's HTTP Basic
 * credentials, 401 without them, 404 for a file it does not have), with faults for the next
 * downloads, a switch that takes it down (connection refused) and back on the same port, and the
 * REPORT_AVAILABLE notification Adyen sends for a file (signed by Adyen's own library).
 */
export async function startAdyenReports() {
  const files = new Map<string, string>();
  const faults: ReportFault[] = [];
  const seen: Seen[] = [];
  let releaseStalled: () => void = () => {};
  let stalled = new Promise<void>((resolve) => {
    releaseStalled = resolve;
  });
  const expected = `Basic ${Buffer.from(`${reportUsername}:${reportPassword}`).toString("base64")}`;

  const serve = async (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? "/").split("?")[0];
    const authorization = request.headers.authorization ?? null;
    seen.push({ path, authorization, at: Date.now() });
    if (authorization !== expected) {
      response.writeHead(401, { "www-authenticate": 'Basic realm="Adyen"' });
      return response.end("Unauthorized");
    }
    const file = files.get(path);
    if (request.method !== "GET" || file === undefined) {
      response.writeHead(404, { "content-type": "text/plain" });
      return response.end("Not found");
    }
    const fault = faults.shift();
    if (fault?.kind === "status") {
      response.writeHead(fault.status, { "content-type": "text/plain" });
      return response.end(`Injected fault: ${fault.status}`);
    }
    if (fault?.kind === "timeout") await Bun.sleep(fault.ms);
    if (response.destroyed) return;
    const body = Buffer.from(file, "utf8");
    response.writeHead(200, {
      "content-type": "text/csv; charset=utf-8",
      "content-length": body.byteLength,
      "content-disposition": `attachment; filename="${path.split("/").pop()}"`,
    });
    if (fault?.kind === "stall") {
      const half = file.lastIndexOf("\n", Math.floor(file.length / 2)) + 1;
      response.write(Buffer.from(file.slice(0, half), "utf8"));
      await stalled;
      if (!response.destroyed) response.end(Buffer.from(file.slice(half), "utf8"));
      return;
    }
    response.end(body);
  };

  let server = createServer((request, response) => void serve(request, response));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  const url = `http://127.0.0.1:${port}`;
  const prefix = `${url}/reports/download/MerchantAccount/${adyenMerchantAccount}/`;

  return {
    url,
    /** ADYEN_REPORT_URL_PREFIX for this server. */
    prefix,
    /** The settings that let payments download from it. */
    env: {
      ADYEN_REPORT_USERNAME: reportUsername,
      ADYEN_REPORT_PASSWORD: reportPassword,
      ADYEN_REPORT_URL_PREFIX: prefix,
    },
    /** Makes `csv` downloadable as `fileName`; answers its URL. */
    publish(fileName: string, csv: string): string {
      files.set(new URL(`${prefix}${fileName}`).pathname, csv);
      return `${prefix}${fileName}`;
    },
    fail(...next: ReportFault[]) {
      faults.push(...next);
    },
    /** Lets a stalled download finish (and the next one stall again). */
    release() {
      releaseStalled();
      stalled = new Promise<void>((resolve) => {
        releaseStalled = resolve;
      });
    },
    /** The downloads asked for (of `fileName`, or all), oldest first. */
    downloads: (fileName?: string) =>
      seen.filter((request) => !fileName || request.path.endsWith(`/${fileName}`)),
    /** Connection refused until `up()`. */
    async down() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
    async up() {
      server = createServer((request, response) => void serve(request, response));
      await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    },
    async stop() {
      releaseStalled();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export type AdyenReports = Awaited<ReturnType<typeof startAdyenReports>>;

/** A unique report file name, as Adyen names the daily payment accounting report. */
export const reportFileName = () =>
  `payments_accounting_report_2026_11_27_${crypto.randomUUID().slice(0, 8)}.csv`;

/**
 * The REPORT_AVAILABLE notification Adyen sends for a report (docs.adyen.com, "Automatically get
 * reports"): pspReference the file name, reason its download URL, amount 0; signed by Adyen's own
 * HmacValidator. `live` and the merchant account can be changed (G4).
 */
export function reportAvailable(
  fileName: string,
  url: string,
  { live = "false", merchantAccountCode = adyenMerchantAccount } = {},
) {
  const item = adyenItem(null, {
    additionalData: {},
    amount: { currency: "EUR", value: 0 },
    eventCode: "REPORT_AVAILABLE",
    merchantAccountCode,
    merchantReference: "",
    operations: undefined,
    paymentMethod: undefined,
    pspReference: fileName,
    reason: url,
    success: "true",
  });
  return adyenBatch([signedItem(item)], live);
}

import { describe, expect, test } from "bun:test";
import { ConfigError } from "@commerce/shared/platform/env";
import {
  adyenReportSettings,
  bookedAtOf,
  lineNotification,
  minorUnits,
  type ReportColumns,
  reportColumnsOf,
  reportLineOf,
  underPrefix,
} from "./report";
import { CsvReader } from "./report-csv";

/** Every record of `text` fed to the reader in pieces of `size` characters. */
function read(text: string, size = text.length) {
  const reader = new CsvReader();
  const records = [];
  for (let i = 0; i < text.length; i += size) records.push(...reader.push(text.slice(i, i + size)));
  records.push(...reader.end());
  return records;
}

describe("the report's CSV (B1)", () => {
  const text =
    '\uFEFFa,b,c\r\n1,"two, with a comma","say ""hi"""\r\n"multi\nline",,x\n\nlast,row,here';

  test("B1: quoted fields with commas, doubled quotes and line breaks, CRLF or LF, a BOM, however the bytes are split", () => {
    const expected = [
      { line: 1, fields: ["a", "b", "c"] },
      { line: 2, fields: ["1", "two, with a comma", 'say "hi"'] },
      { line: 3, fields: ["multi\nline", "", "x"] },
      { line: 6, fields: ["last", "row", "here"] },
    ];
    for (const size of [1, 2, 3, 7, 1000]) expect(read(text, size)).toEqual(expected);
    const bytes = new TextEncoder().encode("é,ü\n");
    const reader = new CsvReader();
    const split = [
      ...reader.push(bytes.slice(0, 1)),
      ...reader.push(bytes.slice(1)),
      ...reader.end(),
    ];
    expect(split).toEqual([{ line: 1, fields: ["é", "ü"] }]);
  });

  test("B1: a stray quote, text after a closing quote and an unclosed quote are malformed records; the reader goes on at the next line", () => {
    const records = read('a,b"c\n"x"y,z\nok,1\n"never closed,2\n');
    expect(records.map((r) => [r.line, r.malformed ?? null])).toEqual([
      [1, "a quote inside an unquoted field"],
      [2, "text after a closing quote"],
      [3, null],
      [4, "a quote never closed"],
    ]);
    expect(records[2].fields).toEqual(["ok", "1"]);
  });
});

const header = [
  "Company Account",
  "Merchant Account",
  "Psp Reference",
  "Merchant Reference",
  "Payment Method",
  "Creation Date",
  "TimeZone",
  "Main Currency",
  "Main Amount",
  "Record Type",
  "Modification Psp Reference",
];

describe("the report's lines (B1)", () => {
  const columns = reportColumnsOf(header) as ReportColumns;

  test("B1: columns are found by name, Creation Date standing for Booking Date; a header without them says which are missing", () => {
    expect(typeof columns).toBe("object");
    expect(reportColumnsOf(["Psp Reference", "Record Type"])).toContain("Merchant Account");
  });

  test("B1: an Authorised line is the notification report:Authorised:<pspReference>, paying its order as AUTHORISATION would", () => {
    const line = reportLineOf(
      [
        "Co",
        "ShopECOM",
        "8815000000000001",
        "42",
        "visa",
        "2026-11-27 10:00:00",
        "CET",
        "JPY",
        "1999",
        "Authorised",
        "",
      ],
      2,
      columns,
    );
    if (typeof line !== "object") throw new Error(String(line));
    expect(lineNotification(line)).toEqual({
      id: "report:Authorised:8815000000000001",
      event: "Authorised",
      orderId: 42,
      paymentRef: "8815000000000001",
      amount: 1999,
      currency: "JPY",
      message: "payment.succeeded",
      stage: undefined,
    });
    expect(line.bookedAt?.toISOString()).toBe("2026-11-27T09:00:00.000Z");
  });

  test("B1: a Refunded or Chargeback line is named by its own (modification) pspReference; other record types are not read; a bad amount or reference is malformed", () => {
    const fields = (
      type: string,
      amount: string,
      psp = "8815000000000001",
      mod = "9915000000000002",
    ) => [
      "Co",
      "ShopECOM",
      psp,
      "42",
      "visa",
      "2026-11-27 10:00:00",
      "UTC",
      "USD",
      amount,
      type,
      mod,
    ];
    const refunded = reportLineOf(fields("Refunded", "-19.99"), 3, columns);
    if (typeof refunded !== "object") throw new Error(String(refunded));
    expect(lineNotification(refunded)).toMatchObject({
      id: "report:Refunded:9915000000000002",
      paymentRef: "8815000000000001",
      amount: 1999,
      message: "payment.refunded",
    });
    const chargeback = reportLineOf(fields("Chargeback", "5.00"), 4, columns);
    if (typeof chargeback !== "object") throw new Error(String(chargeback));
    expect(lineNotification(chargeback)).toMatchObject({
      message: "payment.disputed",
      stage: "lost",
    });
    expect(reportLineOf(fields("Settled", "x"), 5, columns)).toBeUndefined();
    expect(reportLineOf(fields("Authorised", "19.999"), 6, columns)).toBe(
      "Main Amount is not an amount",
    );
    expect(reportLineOf(fields("Authorised", "1", "a:b"), 7, columns)).toBe(
      "Psp Reference is not an Adyen pspReference",
    );
    expect(reportLineOf(["too", "few"], 8, columns)).toContain("fields");
  });

  test("B1: amounts in major units become minor units by the currency's exponent", () => {
    expect(minorUnits("19.99", "USD")).toBe(1999);
    expect(minorUnits("-5", "EUR")).toBe(500);
    expect(minorUnits("1.500", "KWD")).toBe(1500);
    expect(minorUnits("1999", "JPY")).toBe(1999);
    expect(minorUnits("19.9", "JPY")).toBeUndefined();
    expect(minorUnits("1e3", "USD")).toBeUndefined();
    expect(bookedAtOf("2026-11-27 10:00:00", "Nowhere/Zone")?.toISOString()).toBe(
      "2026-11-27T10:00:00.000Z",
    );
  });
});

describe("the report settings (B1)", () => {
  const all = {
    ADYEN_REPORT_USERNAME: "report_1@Company.Shop",
    ADYEN_REPORT_PASSWORD: "secret",
    ADYEN_REPORT_URL_PREFIX: "https://ca-test.adyen.com/reports/download/MerchantAccount/ShopECOM/",
  };

  test("B1: all three or none; with Adyen's webhook; the prefix ends with a slash, so no other host can start with it", () => {
    expect(adyenReportSettings({}, true)).toBeUndefined();
    expect(adyenReportSettings(all, true)?.urlPrefix).toBe(all.ADYEN_REPORT_URL_PREFIX);
    expect(() => adyenReportSettings({ ...all, ADYEN_REPORT_PASSWORD: undefined }, true)).toThrow(
      ConfigError,
    );
    expect(() => adyenReportSettings(all, false)).toThrow("ADYEN_HMAC_KEYS");
    expect(() =>
      adyenReportSettings({ ...all, ADYEN_REPORT_URL_PREFIX: "https://ca-test.adyen.com" }, true),
    ).toThrow("must end with /");
  });

  test("B1: a URL is under the prefix only after normalising it: no climbing out with .., no look-alike host", () => {
    const prefix = all.ADYEN_REPORT_URL_PREFIX;
    expect(underPrefix(`${prefix}payments_accounting_report_2026_11_27.csv`, prefix)).toBe(true);
    expect(underPrefix(`${prefix}../../OtherShop/report.csv`, prefix)).toBe(false);
    expect(underPrefix("https://ca-test.adyen.com.evil.example/reports/download/", prefix)).toBe(
      false,
    );
    expect(underPrefix("not a url", prefix)).toBe(false);
  });
});

import { afterAll, expect } from "bun:test";
import type { Sql } from "@commerce/shared/platform/database";
import { startPayments } from "@commerce/testing/in-process";
import { privateDatabase } from "@commerce/testing/private-database";
import fc from "fast-check";

/** One hash over every row of every table of `schema`: equal hashes, unchanged tables. */
export async function fingerprint(sql: Sql, schema: string): Promise<string> {
  const tables = await sql<{ table_name: string }[]>`
    select table_name from information_schema.tables
    where table_schema = ${schema} and table_type = 'BASE TABLE' order by table_name`;
  const rows = tables.map(
    ({ table_name }) =>
      sql`select ${table_name} || ':' || md5(coalesce(string_agg(t::text, '|' order by t::text), ''))
      as hash from ${sql(schema)}.${sql(table_name)} t`,
  );
  return (await Promise.all(rows)).map(([row]) => row.hash).join(",");
}

const saneRequestId = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * What every answer must be (E1, E2, O5): never a 5xx; an error is problem+json whose status is
 * the HTTP status; a validation error names its fields; every answer carries a sane request id.
 */
export async function expectWellFormed(response: Response): Promise<any> {
  expect(response.status).toBeLessThan(500);
  expect(response.headers.get("x-request-id") ?? "").toMatch(saneRequestId);
  const text = await response.text();
  if (response.status < 400) return text;
  expect(response.headers.get("content-type")).toBe("application/problem+json");
  const problem = JSON.parse(text);
  expect(problem).toMatchObject({ type: "about:blank", status: response.status });
  expect(typeof problem.title).toBe("string");
  expect(typeof problem.detail).toBe("string");
  if (problem.errors !== undefined) {
    expect(problem.errors.length).toBeGreaterThan(0);
    for (const error of problem.errors)
      expect(error).toEqual({ path: expect.any(String), message: expect.any(String) });
  }
  return problem;
}

/** Tracks the tables across requests: a rejected request must leave them as they were. */
export class RowWatch {
  private last = "";

  constructor(
    private readonly sql: Sql,
    private readonly schema: string,
  ) {}

  async start(): Promise<void> {
    this.last = await fingerprint(this.sql, this.schema);
  }

  /** Call right after each response, before other assertions, so one failure does not leave a stale baseline. */
  async after(status: number): Promise<void> {
    const [before, now] = [this.last, await fingerprint(this.sql, this.schema)];
    this.last = now;
    if (status >= 400) expect(now).toBe(before);
  }
}

/**
 * The payments service on a database of its own, its app, and a RowWatch started over its tables,
 * for the calling test file; closed and dropped after its tests.
 */
export async function privatePayments(env: Record<string, string> = {}) {
  const database = await privateDatabase();
  const payments = await startPayments({ env: { ...env, DATABASE_URL: database.url } });
  afterAll(async () => {
    await payments.close();
    await database.drop();
  });
  const rows = new RowWatch(database.sql, "payments");
  await rows.start();
  return { payments, app: payments.app(), rows };
}

export const numRuns = Number(process.env.HOSTILE_RUNS ?? 150);

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));

/** Text a careful client would never send: NUL, lone surrogates, controls, astral characters. */
export const hostileString = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: fc.oneof(loneSurrogate, fc.constantFrom("\u0000", "a", "\u{1F600}", "\n")) }),
  fc.constantFrom(
    "",
    " ",
    "\u0000",
    "a\u0000b",
    "\ud800",
    "Mug\udfff",
    "paid",
    "PAID",
    " paid",
    "5",
    "0x10",
  ),
  fc.integer({ min: 90, max: 300 }).map((n) => "x".repeat(n)),
);

/** Numbers at and around every bound the schemas have, and far beyond them. */
export const hostileNumber = fc.oneof(
  fc.constantFrom(
    0,
    -0,
    1,
    -1,
    0.5,
    1.5,
    1000,
    1001,
    100_000_000,
    100_000_001,
    2 ** 31 - 1,
    2 ** 31,
    2 ** 53 - 1,
    2 ** 53,
    1e308,
    -1e308,
    Number.MIN_VALUE,
  ),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** Any JSON value, leaning on the hostile strings and numbers. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { depthSize: "small" },
  hostileNumber,
  hostileString,
  fc.constantFrom(null, true, false, [], {}, { toString: {} }, { valueOf: 1, toString: "x" }),
  fc
    .integer({ min: 30, max: 2000 })
    .map((depth) => JSON.parse(`${"[".repeat(depth)}${"]".repeat(depth)}`)),
  fc.jsonValue({ maxDepth: 3 }),
);

/**
 * A JSON object as raw text, so it may repeat a key or carry `__proto__` as a plain member:
 * either a valid `example` with one member replaced or added, or members drawn from the route's
 * `keys` and look-alikes.
 */
export const hostileObjectText = (keys: string[], example: string) =>
  fc.oneof(nearlyValid(keys, example), anyMembers(keys));

const nearlyValid = (keys: string[], example: string) =>
  fc
    .tuple(fc.oneof(fc.constantFrom(...keys), fc.constantFrom("__proto__", "extra")), hostileValue)
    .map(([key, value]) => {
      const members = Object.entries(JSON.parse(example)).filter(([k]) => k !== key);
      members.push([key, value]);
      return `{${members.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(",")}}`;
    });

const anyMembers = (keys: string[]) =>
  fc
    .array(
      fc.tuple(
        fc.oneof(
          fc.constantFrom(...keys),
          fc.constantFrom(...keys.map((k) => k.toUpperCase()), "__proto__", "constructor", ""),
          fc.string({ maxLength: 8 }),
        ),
        hostileValue,
      ),
      { maxLength: 6 },
    )
    .map(
      (members) =>
        `{${members.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(",")}}`,
    );

/** Request bodies that are not JSON, or barely: truncated, padded, nested, oversized, not UTF-8. */
export const brokenBody = (valid: string, limitBytes: number): fc.Arbitrary<Uint8Array> =>
  fc.oneof(
    fc.nat({ max: valid.length - 1 }).map((n) => text(valid.slice(0, n))),
    fc
      .constantFrom(
        "",
        "null",
        "[]",
        '"x"',
        "{",
        "}",
        "{,}",
        "{'qty':1}",
        '{"qty":1,}',
        '{"qty":1}/*c*/',
        '{"qty":NaN}',
        '{"qty":1e999}',
        `{"qty":${"9".repeat(400)}}`,
        `${valid}${valid}`,
      )
      .map(text),
    fc
      .integer({ min: 100, max: 20_000 })
      .map((depth) => text(`${"[".repeat(depth)}${"]".repeat(depth)}`)),
    fc
      .integer({ min: 100, max: 20_000 })
      .map((depth) => text(`${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`)),
    fc.constant(text(`{"pad":"${"x".repeat(limitBytes)}"}`)),
    fc
      .tuple(fc.nat({ max: valid.length }), fc.uint8Array({ minLength: 1, maxLength: 4 }))
      .map(([at, bytes]) => {
        const raw = text(valid);
        const invalid = bytes.map((b) => 0x80 | (b & 0x3f)); // continuation bytes with no lead byte
        return new Uint8Array([...raw.slice(0, at), ...invalid, ...raw.slice(at)]);
      }),
  );

const text = (value: string) => new TextEncoder().encode(value);

/** Media types a client might send instead of application/json. */
export const oddContentType = fc.oneof(
  fc.constantFrom(
    "text/plain",
    "text/json",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/jsonx",
    "application/json-patch+json",
    "application/problem+json",
    "application/json, text/plain",
    "json",
    "*/*",
    "",
  ),
  fc.stringMatching(/^[\x21-\x7e]{1,30}$/).filter((t) => !/^application\/json(;|$)/i.test(t)),
);

/** A header value the Fetch API lets through: visible ASCII, spaces and tabs, Latin-1. */
export const headerValue = fc.oneof(
  fc.stringMatching(/^[\x20-\x7e\t]{0,200}$/),
  fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)) }),
  fc.integer({ min: 1000, max: 8000 }).map((n) => "a".repeat(n)),
);

/** Path segments that are not canonical positive decimal integers, percent-encoded as sent. */
export const badIdSegment = fc.oneof(
  fc.constantFrom(
    "0",
    "-1",
    "-0",
    "01",
    "+1",
    "1.0",
    "1.",
    ".5e1",
    "1e3",
    "1E3",
    "0x10",
    "0b1",
    "0o7",
    "1_0",
    "Infinity",
    "NaN",
    "null",
    "true",
    "%20",
    "%201",
    "1%20",
    "%00",
    "%ZZ",
    "%",
    "%EF%BC%91",
    "%F0%9F%98%80",
    "99999999999999999999",
    "9007199254740993",
    "1;2",
    "1,2",
    "[1]",
    "..",
    "%2e%2e",
  ),
  fc
    .string({ unit: "binary", minLength: 1, maxLength: 20 })
    .filter((s) => !/^[1-9][0-9]*$/.test(s))
    .map(encodeURIComponent),
);

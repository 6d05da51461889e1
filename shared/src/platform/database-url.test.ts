import { describe, expect, test } from "bun:test";
import postgres from "postgres";
import { readCommonConfig } from "./config";
import { databaseHosts, databaseUrl } from "./database-url";
import { ConfigError } from "./env";

const defaults = { port: 3000, ratePerSecond: 10, burst: 20 };
const hostList = "postgres://app:s3cret@db1:5432,db2:5433,127.0.0.1:5434/commerce";

describe("DATABASE_URL (X2)", () => {
  test("X2: a single host is taken as it is", () => {
    expect(databaseUrl("postgres://u:p@h:5432/db?max=4")).toBe("postgres://u:p@h:5432/db?max=4");
    expect(databaseUrl("postgresql://h/db")).toBe("postgresql://h/db");
  });

  test("X2: a host list with target_session_attrs=primary reaches the driver as libpq reads it", () => {
    const url = databaseUrl(`${hostList}?target_session_attrs=primary`);
    const sql = postgres(url);
    expect(sql.options.host).toEqual(["db1", "db2", "127.0.0.1"]);
    expect(sql.options.port).toEqual([5432, 5433, 5434]);
    expect(sql.options.target_session_attrs).toBe("primary");
    expect(sql.options.user).toBe("app");
    expect(sql.options.database).toBe("commerce");
    expect(databaseHosts(url)).toEqual(["db1:5432", "db2:5433", "127.0.0.1:5434"]);
  });

  test("X2: read-write is taken as primary (a PostgreSQL 14+ standby reports itself writable)", () => {
    const url = databaseUrl(`${hostList}?target_session_attrs=read-write&max=3`);
    expect(new URLSearchParams(url.split("?")[1]).get("target_session_attrs")).toBe("primary");
    expect(url).toContain("max=3");
  });

  test("X2: a host list without target_session_attrs looks for the primary", () => {
    expect(postgres(databaseUrl(hostList)).options.target_session_attrs).toBe("primary");
    // One host behind a proxy (HAProxy + Patroni) is left to the proxy.
    expect(
      postgres(databaseUrl("postgres://u@haproxy:5000/db")).options.target_session_attrs,
    ).toBeFalsy();
  });

  test.each([
    ["mysql://u:p@h/db", "must start with postgres:// or postgresql://"],
    ["postgres://u:p@/db", "names no host"],
    ["postgres://u:p@db1:5432,,db2:5432/db", "has an empty entry in its host list"],
    ["postgres://u:p@db1:5432,db2:99999/db", 'has a port outside 1-65535 ("db2:99999")'],
    ["postgres://u:p@db1:5432,db2:x/db", 'has a host that is not host or host:port ("db2:x")'],
    ["postgres://u:p@ss@db1/db", "has an @ in its user or password"],
    ["postgres://:p@db1/db", "has a password but no user name"],
    ["postgres://u:p%zz@db1/db", "malformed percent-encoding"],
    ["postgres://u@db1:5432,[::1]:5432/db", "has an IPv6 address in a host list"],
    [
      `${hostList}?target_session_attrs=standby`,
      "target_session_attrs=standby, a read-only server",
    ],
    [`${hostList}?target_session_attrs=prefer-standby`, "a read-only server"],
    [`${hostList}?target_session_attrs=leader`, "has target_session_attrs=leader; use primary"],
  ])("X2: %s stops the service with one line naming what is wrong", (url, reason) => {
    let error: unknown;
    try {
      readCommonConfig({ DATABASE_URL: url }, defaults);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toStartWith("DATABASE_URL ");
    expect(message).toContain(reason);
    expect(message).not.toContain("\n");
    // The password is never repeated.
    expect(message).not.toMatch(/s3cret|:p@|p%zz|ss@/);
  });

  test.each([
    "Zq7/Xk9",
    "Zq7?Xk9",
    "Zq7#Xk9",
    "Zq7@Xk9",
    "Zq7/Xk9?Wm3#Vp5@Yr8",
    "6543/Xk9",
    "Zq7:6543/Xk9",
    "Zq7/Xk9@db3:6543",
    "Zq7#Xk9/Wm3",
    "/Xk9",
  ])(
    "N20 (v5): a password written unencoded (%s) is refused in one line without any part of it",
    (password) => {
      const urls = [
        `postgres://app:${password}@db1:6543/commerce`,
        `postgres://app:${password}@db1:6543,db2:6543/commerce?target_session_attrs=primary`,
        `postgresql://app:${password}@db1/commerce`,
      ];
      const pieces = password.split(/[/?#@:]/).filter((piece) => piece.length > 0);
      for (const url of urls) {
        let error: unknown;
        try {
          readCommonConfig({ DATABASE_URL: url }, defaults);
        } catch (caught) {
          error = caught;
        }
        expect(error).toBeInstanceOf(ConfigError);
        const message = (error as Error).message;
        expect(message).toStartWith("DATABASE_URL ");
        expect(message).not.toContain("\n");
        for (const piece of pieces)
          expect({ url, message }).not.toEqual({ url, message: expect.stringContaining(piece) });
        expect(message).toContain("percent-encode");
      }
    },
  );

  test("N20 (v5): the same passwords percent-encoded are accepted and reach the driver whole", () => {
    const password = "Zq7/Xk9?Wm3#Vp5@Yr8";
    const url = databaseUrl(`postgres://app:${encodeURIComponent(password)}@db1:6543/commerce`);
    expect(postgres(url).options.pass as unknown).toBe(password);
  });
});

import { ConfigError } from "./env";

/** libpq's values of target_session_attrs; the services write, so only the first three will do. */
const writable = ["primary", "read-write", "any"];
const readOnly = ["read-only", "standby", "prefer-standby"];

const fail = (reason: string): never => {
  throw new ConfigError(`DATABASE_URL ${reason}`);
};

/** One `host[:port]` of the host list; the reason it is wrong, or undefined. */
function hostProblem(entry: string): string | undefined {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d*))?$/.exec(entry);
  if (!match) return `has a host that is not host or host:port ("${entry}")`;
  const port = match[2];
  if (port !== undefined && !(/^\d{1,5}$/.test(port) && +port >= 1 && +port <= 65535))
    return `has a port outside 1-65535 ("${entry}")`;
  return undefined;
}

/**
 * X2: DATABASE_URL as libpq reads it, one host or several
 * (`postgres://user:pass@db1:5432,db2:5432/commerce?target_session_attrs=primary`), checked part
 * by part so a mistake stops the service with one line naming what is wrong (and never the
 * credentials). `new URL()` cannot read a host list, which is why this is not a URL format check.
 *
 * What the driver is given differs in one way: `target_session_attrs=read-write` becomes
 * `primary`, and a host list without it gets `primary`. The `postgres` driver's `read-write` only
 * looks at `default_transaction_read_only`, which a standby of PostgreSQL 14+ reports `off`, so
 * it would settle on a standby; and with several hosts libpq's default (`any`) takes the first
 * that answers, standby or not.
 */
export function databaseUrl(text: string): string {
  const scheme = /^postgres(?:ql)?:\/\//.exec(text)?.[0];
  if (!scheme)
    return fail("must start with postgres:// or postgresql:// (e.g. postgres://user@db:5432/name)");
  const rest = text.slice(scheme.length);
  // N20 (v5): whoever wrote a password unencoded meant it to end at the last "@". A "/", "?" or
  // "#" before that "@" would cut the URL inside the password (the driver ends the host list at
  // the first "/" or "?", and a URL's fragment starts at "#"), and every message below would then
  // echo a piece of it as a host, a port or a path. Said here without any of it.
  const lastAt = rest.lastIndexOf("@");
  if (lastAt >= 0 && /[/?#]/.test(rest.slice(0, lastAt)))
    fail(
      "has a /, ?, # or @ in its user or password (or an @ after its host): percent-encode " +
        "them (/ %2F, ? %3F, # %23, @ %40)",
    );
  // Where the postgres driver ends the host list: at the first "/" or "?".
  const authorityEnd = rest.search(/[/?]/);
  const authority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd);
  const tail = authorityEnd < 0 ? "" : rest.slice(authorityEnd);
  const at = authority.indexOf("@");
  const userInfo = at < 0 ? undefined : authority.slice(0, at);
  const hostList = at < 0 ? authority : authority.slice(at + 1);

  if (userInfo !== undefined) {
    if (hostList.includes("@")) fail("has an @ in its user or password: percent-encode it (%40)");
    if (userInfo === "" || userInfo.startsWith(":")) fail("has a password but no user name");
    try {
      decodeURIComponent(userInfo);
    } catch {
      fail("has malformed percent-encoding in its user or password");
    }
  }
  if (hostList === "") fail("names no host (postgres://user@host:5432/name)");
  const hosts = hostList.split(",");
  if (hosts.some((host) => host === ""))
    fail("has an empty entry in its host list (host1:port1,host2:port2)");
  for (const host of hosts) {
    const problem = hostProblem(host);
    if (problem) fail(problem);
    // The driver splits a host list at each ":" of an entry, so an IPv6 address cannot be in one.
    if (hosts.length > 1 && host.startsWith("["))
      fail(`has an IPv6 address in a host list ("${host}"); use a host name`);
  }

  const queryStart = tail.indexOf("?");
  const path = queryStart < 0 ? tail : tail.slice(0, queryStart);
  const params = new URLSearchParams(queryStart < 0 ? "" : tail.slice(queryStart + 1));
  if (/[\s#]/.test(path)) fail("has a database name with a space or # (percent-encode it)");

  const attrs = params.get("target_session_attrs");
  if (attrs !== null && readOnly.includes(attrs))
    fail(
      `asks for target_session_attrs=${attrs}, a read-only server; the services write: use primary`,
    );
  if (attrs !== null && !writable.includes(attrs))
    fail(`has target_session_attrs=${attrs}; use primary (or read-write, taken as primary) or any`);
  if (attrs === "read-write" || (attrs === null && hosts.length > 1))
    params.set("target_session_attrs", "primary");

  const query = params.toString();
  const normalized = `${scheme}${authority}${path}${query ? `?${query}` : ""}`;
  // The driver reads the rest with `new URL()` after keeping only the first host.
  if (!URL.canParse(normalized.replace(hostList, hosts[0])))
    fail("is not a valid URL once its host list is read");
  return normalized;
}

/** The host list of a DATABASE_URL (as `databaseUrl` accepted it), e.g. for a log line. */
export const databaseHosts = (url: string): string[] =>
  url
    .replace(/^postgres(?:ql)?:\/\//, "")
    .split(/[/?]/)[0]
    .replace(/^[^@]*@/, "")
    .split(",");

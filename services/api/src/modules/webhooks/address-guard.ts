import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";

/** H7: where deliveries may go, from WEBHOOK_ALLOW_HTTP and WEBHOOK_ALLOW_PRIVATE. */
export type AddressPolicy = { allowHttp: boolean; allowPrivate: boolean };

/** Loopback, private, link-local, unique-local, shared and metadata ranges (H7). */
const internal = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.168.0.0", 16],
] as const)
  internal.addSubnet(network, prefix, "ipv4");
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
] as const)
  internal.addSubnet(network, prefix, "ipv6");

/** True for an address H7 keeps deliveries away from (IPv4-mapped IPv6 included). */
export const isInternalAddress = (address: string) =>
  internal.check(address, isIP(address) === 6 ? "ipv6" : "ipv4");

/** A delivery refused before it connected; its attempt records `blocked_address`. */
export class BlockedAddressError extends Error {
  readonly code = "blocked_address";
}

const bare = (hostname: string) => hostname.replace(/^\[(.*)\]$/, "$1");

/**
 * H7 on create and update: the reason a URL may not be an endpoint, or undefined when it may.
 * A literal address, `localhost`, or a name resolving to an internal address is refused; a name
 * that does not resolve yet is accepted (the check runs again at every connection).
 */
export async function urlRefusal(raw: string, policy: AddressPolicy): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "url must be an absolute URL";
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && policy.allowHttp))
    return policy.allowHttp ? "url must be http or https" : "url must be https";
  if (url.username || url.password) return "url must not carry credentials";
  if (policy.allowPrivate) return undefined;
  const host = bare(url.hostname);
  if (isIP(host))
    return isInternalAddress(host) ? `url names an internal address (${host})` : undefined;
  if (host === "localhost" || host.endsWith(".localhost")) return "url names localhost";
  const addresses = await lookup(host, { all: true, verbatim: true }).catch(() => []);
  const blocked = addresses.find((a) => isInternalAddress(a.address));
  return blocked ? `url resolves to an internal address (${blocked.address})` : undefined;
}

type LookupCallback = (
  error: Error | null,
  address: string | Array<{ address: string; family: number }>,
  family?: number,
) => void;

/**
 * H7 at every connection, as `http.request`'s `lookup`: the name is resolved once, every
 * address is checked, and the socket connects to the address that was checked, so a DNS answer
 * that changes between the check and the connection (rebinding) cannot slip through.
 */
export function guardedLookup(policy: AddressPolicy) {
  return (
    hostname: string,
    options: { all?: boolean; family?: number } | number,
    callback: LookupCallback,
  ) => {
    const all = typeof options === "object" && options.all === true;
    lookup(hostname, { all: true, verbatim: true })
      .then((addresses) => {
        const blocked = addresses.find((a) => isInternalAddress(a.address));
        if (blocked && !policy.allowPrivate)
          throw new BlockedAddressError(`${hostname} resolves to ${blocked.address}`);
        if (addresses.length === 0) throw new Error(`${hostname} has no address`);
        if (all) callback(null, addresses);
        else callback(null, addresses[0].address, addresses[0].family);
      })
      .catch((error) => callback(error, all ? [] : ""));
  };
}

/** H7 for a URL whose host is a literal address, which no lookup sees. */
export function literalAddressRefused(url: URL, policy: AddressPolicy): boolean {
  const host = bare(url.hostname);
  return !policy.allowPrivate && isIP(host) !== 0 && isInternalAddress(host);
}

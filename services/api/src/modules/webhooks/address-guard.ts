import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { isInternalAddress } from "./special-addresses";

/** H7: where deliveries may go, from WEBHOOK_ALLOW_HTTP and WEBHOOK_ALLOW_PRIVATE. */
export type AddressPolicy = { allowHttp: boolean; allowPrivate: boolean };

export { isInternalAddress } from "./special-addresses";

/** A delivery refused before it connected; its attempt records `blocked_address`. */
export class BlockedAddressError extends Error {
  readonly code = "blocked_address";
}

const bare = (hostname: string) => hostname.replace(/^\[(.*)\]$/, "$1");

/**
 * H7, N18 on create and update: the reason a URL may not be an endpoint, or undefined when it may.
 * A tab or line break (which URL parsing would silently drop) is refused, so what is stored is
 * what was sent, normalized. A literal address, `localhost`, or a name resolving to an internal
 * address is refused, naming the kind of reason but never the address a name resolved to; a name
 * that does not resolve yet is accepted (the check runs again at every connection).
 */
export async function urlRefusal(raw: string, policy: AddressPolicy): Promise<string | undefined> {
  if (/[\t\r\n]/.test(raw)) return "url must not contain tabs or line breaks";
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "url must be an absolute URL";
  }
  const refused = protocolRefusal(url, policy);
  if (refused) return refused;
  if (url.username || url.password) return "url must not carry credentials";
  if (policy.allowPrivate) return undefined;
  const host = bare(url.hostname);
  if (isIP(host)) return isInternalAddress(host) ? "url names an internal address" : undefined;
  if (host === "localhost" || host.endsWith(".localhost")) return "url names localhost";
  const addresses = await lookup(host, { all: true, verbatim: true }).catch(() => []);
  return addresses.some((a) => isInternalAddress(a.address))
    ? "url resolves to an internal address"
    : undefined;
}

/** H7: https, or http where WEBHOOK_ALLOW_HTTP allows it, on save and at every attempt. */
export function protocolRefusal(url: URL, policy: AddressPolicy): string | undefined {
  if (url.protocol === "https:" || (url.protocol === "http:" && policy.allowHttp)) return undefined;
  return policy.allowHttp ? "url must be http or https" : "url must be https";
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

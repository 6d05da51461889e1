import { BlockList, isIPv4, isIPv6 } from "node:net";

/**
 * H7: every block of IANA's IPv4 and IPv6 Special-Purpose Address Registries that is not globally
 * reachable, plus multicast, reserved 240/4 and broadcast. Where a registry block holds a few
 * globally reachable addresses (192.0.0.9, 2001:1::1, AMT 2001:3::/32, ...), the whole block is
 * refused: a webhook receiver is never one of them. An IPv6 address that carries an IPv4 one is
 * judged by that IPv4 address too (see embeddedIpv4).
 */
const ipv4Blocks = [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // shared address space (carrier-grade NAT)
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, cloud metadata
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation TEST-NET-1
  ["192.88.99.0", 24], // deprecated 6to4 relay anycast
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation TEST-NET-2
  ["203.0.113.0", 24], // documentation TEST-NET-3
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, and 255.255.255.255 broadcast
] as const;

const ipv6Blocks = [
  ["::", 128], // unspecified
  ["::1", 128], // loopback
  ["64:ff9b:1::", 48], // local-use IPv4/IPv6 translation
  ["100::", 64], // discard-only
  ["2001::", 23], // IETF protocol assignments (Teredo, benchmarking, ORCHID, ...)
  ["2001:db8::", 32], // documentation
  ["3fff::", 20], // documentation
  ["5f00::", 16], // segment routing SIDs
  ["fc00::", 7], // unique-local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8], // multicast
] as const;

export const specialBlocks = { ipv4: ipv4Blocks, ipv6: ipv6Blocks };

const blocked = new BlockList();
for (const [network, prefix] of ipv4Blocks) blocked.addSubnet(network, prefix, "ipv4");
for (const [network, prefix] of ipv6Blocks) blocked.addSubnet(network, prefix, "ipv6");

/** The 16 bytes of an IPv6 address in text (`::`, an IPv4 tail and a zone allowed). */
export function ipv6Bytes(address: string): Uint8Array {
  const text = address.replace(/%.*$/, "");
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  const hex = dotted
    ? text.slice(0, -dotted.length) +
      ((n) => `${((n[0] << 8) | n[1]).toString(16)}:${((n[2] << 8) | n[3]).toString(16)}`)(
        dotted.split(".").map(Number),
      )
    : text;
  const [head, tail] = hex.includes("::") ? hex.split("::") : [hex, undefined];
  const groups = (part: string | undefined) => (part ? part.split(":") : []);
  const left = groups(head);
  const right = groups(tail);
  const all =
    tail === undefined
      ? left
      : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  const bytes = new Uint8Array(16);
  all.forEach((group, i) => {
    const value = Number.parseInt(group, 16);
    bytes[2 * i] = value >> 8;
    bytes[2 * i + 1] = value & 0xff;
  });
  return bytes;
}

const startsWith = (bytes: Uint8Array, prefix: number[]) => prefix.every((b, i) => bytes[i] === b);
const ipv4At = (bytes: Uint8Array, at: number) => Array.from(bytes.subarray(at, at + 4)).join(".");

/**
 * The IPv4 address an IPv6 one carries: IPv4-mapped ::ffff:0:0/96, IPv4-compatible ::/96,
 * IPv4-translated ::ffff:0:0:0/96, NAT64 64:ff9b::/96 (the last 32 bits) and 6to4 2002::/16
 * (bits 16 to 47). 64:ff9b:1::/48 is refused as a whole (local use, not globally reachable).
 */
export function embeddedIpv4(address: string): string | undefined {
  const bytes = ipv6Bytes(address);
  const zeros = (n: number) => Array(n).fill(0);
  if (startsWith(bytes, [...zeros(10), 0xff, 0xff])) return ipv4At(bytes, 12);
  if (startsWith(bytes, zeros(12))) return ipv4At(bytes, 12);
  if (startsWith(bytes, [...zeros(8), 0xff, 0xff, 0, 0])) return ipv4At(bytes, 12);
  if (startsWith(bytes, [0, 0x64, 0xff, 0x9b, ...zeros(8)])) return ipv4At(bytes, 12);
  if (startsWith(bytes, [0x20, 0x02])) return ipv4At(bytes, 2);
  return undefined;
}

/** True for an address H7 keeps deliveries away from. */
export function isInternalAddress(address: string): boolean {
  if (isIPv4(address)) return blocked.check(address, "ipv4");
  if (!isIPv6(address)) return true; // not an address at all: never connect to it
  const carried = embeddedIpv4(address);
  if (carried !== undefined && blocked.check(carried, "ipv4")) return true;
  return blocked.check(address.replace(/%.*$/, ""), "ipv6");
}

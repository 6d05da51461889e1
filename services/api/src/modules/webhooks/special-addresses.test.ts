import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { embeddedIpv4, isInternalAddress, specialBlocks } from "./special-addresses";

// H7: unit tests of the guard's table: no traffic, no api.
const v4 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
const v4Number = (address: string) =>
  address.split(".").reduce((sum, part) => sum * 256 + Number(part), 0);
const hex = (address: string) => {
  const [a, b, c, d] = address.split(".").map(Number);
  return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
};

/** Every form H7 says carries an IPv4 address, for `address`. */
const carriers = (address: string) => [
  `::ffff:${address}`, // IPv4-mapped
  `::ffff:${hex(address)}`,
  `::${address}`, // IPv4-compatible
  `::ffff:0:${address}`, // IPv4-translated
  `64:ff9b::${address}`, // NAT64
  `64:ff9b::${hex(address)}`,
  `2002:${hex(address)}::1`, // 6to4
];

/** An address inside an IPv4 block, anywhere in it. */
const inBlock = ([network, prefix]: readonly [string, number]) =>
  fc
    .integer({ min: 0, max: 2 ** (32 - prefix) - 1 })
    .map((offset) => v4(v4Number(network) + offset));

const globalV4 = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "151.101.1.69"];

describe("H7: IANA special-purpose addresses", () => {
  for (const block of specialBlocks.ipv4)
    test(`H7: ${block[0]}/${block[1]} is refused, plain and in every IPv6 form that carries it`, () => {
      fc.assert(
        fc.property(inBlock(block), (address) => {
          expect(isInternalAddress(address)).toBe(true);
          for (const carried of carriers(address)) expect(isInternalAddress(carried)).toBe(true);
        }),
        { numRuns: 200 },
      );
      const last = v4(v4Number(block[0]) + 2 ** (32 - block[1]) - 1);
      expect(isInternalAddress(block[0])).toBe(true);
      expect(isInternalAddress(last)).toBe(true);
    });

  test("H7: the named IPv4 cases the review found", () => {
    for (const address of [
      "255.255.255.255",
      "224.0.0.1",
      "239.255.255.250",
      "240.0.0.1",
      "198.18.0.1",
      "198.19.255.255",
      "192.0.0.8",
      "0.0.0.0",
      "100.64.0.1",
      "169.254.169.254",
    ])
      expect(isInternalAddress(address)).toBe(true);
  });

  for (const [network, prefix] of specialBlocks.ipv6)
    test(`H7: ${network}/${prefix} is refused`, () => {
      expect(isInternalAddress(network)).toBe(true);
      if (prefix < 128) {
        const bytes = network.replace(/::$/, "");
        expect(isInternalAddress(`${bytes}${bytes.endsWith(":") ? "" : ":"}:ffff:ffff`)).toBe(true);
      }
    });

  test("H7: fec0::/10, ff02::1, fe80::1%eth0, 2001:db8::1, 64:ff9b:1::8.8.8.8 are refused", () => {
    for (const address of [
      "fec0::1",
      "feff::1",
      "ff02::1",
      "fe80::1%eth0",
      "2001:db8::1",
      "64:ff9b:1::808:808",
      "100::1",
      "2001::1",
    ])
      expect(isInternalAddress(address)).toBe(true);
  });

  test("H7: global unicast addresses are allowed, in IPv6 forms carrying a global IPv4 too", () => {
    for (const address of globalV4) {
      expect(isInternalAddress(address)).toBe(false);
      for (const carried of carriers(address)) expect(isInternalAddress(carried)).toBe(false);
    }
    for (const address of ["2606:4700:4700::1111", "2a00:1450:4001:830::200e", "2001:4860::8888"])
      expect(isInternalAddress(address)).toBe(false);
  });

  test("H7: the carried IPv4 address is read from each form", () => {
    expect(embeddedIpv4("::ffff:10.0.0.1")).toBe("10.0.0.1");
    expect(embeddedIpv4("::ffff:a00:1")).toBe("10.0.0.1");
    expect(embeddedIpv4("::7f00:1")).toBe("127.0.0.1");
    expect(embeddedIpv4("::ffff:0:a9fe:a9fe")).toBe("169.254.169.254");
    expect(embeddedIpv4("64:ff9b::c0a8:101")).toBe("192.168.1.1");
    expect(embeddedIpv4("2002:7f00:1::")).toBe("127.0.0.1");
    expect(embeddedIpv4("2606:4700::1")).toBeUndefined();
  });

  test("H7: text that is not an address is never let through", () => {
    expect(isInternalAddress("example.com")).toBe(true);
    expect(isInternalAddress("")).toBe(true);
  });
});

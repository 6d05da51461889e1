import { describe, expect, test } from "bun:test";
import { clientIp, rateLimitKey, unmapped } from "./rate-limit";

describe("rate-limit keys", () => {
  test("N11: an IPv6 client is keyed by its /64, however the address is written", () => {
    const keys = [
      "2001:db8:1:2:3:4:5:6",
      "2001:db8:1:2::7",
      "2001:0db8:0001:0002:ffff:ffff:ffff:ffff",
      "2001:db8:1:2:3:4:1.2.3.4",
    ].map(rateLimitKey);
    expect(new Set(keys)).toEqual(new Set(["2001:db8:1:2::/64"]));
    expect(rateLimitKey("2001:db8:1:3::1")).not.toBe(keys[0]);
  });

  test("N11: an IPv4-mapped IPv6 address is the IPv4 address, as a key and as the stored source", () => {
    for (const mapped of ["::ffff:198.51.100.7", "::FFFF:c633:6407", "0:0:0:0:0:ffff:198.51.100.7"])
      expect(rateLimitKey(mapped)).toBe("198.51.100.7");
    expect(rateLimitKey("198.51.100.7")).toBe("198.51.100.7");
    expect(unmapped("::1")).toBe("::1");
    const request = new Request("http://localhost/", {
      headers: { "x-forwarded-for": "::ffff:198.51.100.7" },
    });
    expect(clientIp(request, "10.0.0.1", 1)).toBe("198.51.100.7");
    expect(clientIp(new Request("http://localhost/"), "::ffff:10.0.0.1", 0)).toBe("10.0.0.1");
  });
});

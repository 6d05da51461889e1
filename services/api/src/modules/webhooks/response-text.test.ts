import { expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { readableText } from "./response-text";

const bytes = (...parts: Array<string | number[]>) =>
  new Uint8Array(
    parts.flatMap((part) =>
      typeof part === "string" ? [...new TextEncoder().encode(part)] : part,
    ),
  );

test("H9: text answers read as sent; NUL and other controls as \\xNN; bytes that are not UTF-8 as U+FFFD", () => {
  expect(readableText(bytes('{"ok":true}\n\tline\r\n'))).toBe('{"ok":true}\n\tline\r\n');
  expect(readableText(bytes("Grüße, 日本, 👩‍👩‍👧"))).toBe("Grüße, 日本, 👩‍👩‍👧");
  expect(readableText(bytes("a", [0, 7, 0x1b, 0x7f], "b"))).toBe("a\\x00\\x07\\x1b\\x7fb");
  expect(readableText(bytes("\u0085\u009f"))).toBe("\\x85\\x9f");
  expect(readableText(bytes([0xff, 0xfe, 0x41]))).toBe("\uFFFD\uFFFDA");
  const gzip = readableText(gzipSync("hello"));
  expect(gzip.startsWith("\\x1f\uFFFD\\x08")).toBe(true);
  expect(gzip.isWellFormed()).toBe(true);
  expect(gzip).not.toContain("\u0000");
});

test("H9: only the first KiB is kept; a character cut at the KiB's end becomes U+FFFD", () => {
  expect(readableText(bytes("x".repeat(5000)))).toBe("x".repeat(1024));
  const cut = readableText(bytes("x".repeat(1023), "é"));
  expect(cut).toBe(`${"x".repeat(1023)}\uFFFD`);
});

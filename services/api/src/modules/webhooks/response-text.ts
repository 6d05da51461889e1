/**
 * H9, N15: the first KiB of a receiver's answer as text PostgreSQL stores and an operator can read,
 * whatever its bytes (NUL, binary, gzip): the bytes are read as UTF-8, a byte that is not part of
 * well-formed UTF-8 becomes U+FFFD, and a control character other than tab, line feed and carriage
 * return is shown as `\xNN` (NUL as `\x00`, the C1 controls as `\x80`..`\x9f`). A text answer reads
 * as it was sent. The answer is never decompressed: gzip is shown as its escaped bytes.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is escaped
const controls = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g;

const escaped = (char: string) => `\\x${char.charCodeAt(0).toString(16).padStart(2, "0")}`;

export const keptBytes = 1024;

export function readableText(bytes: Uint8Array): string {
  const first = bytes.subarray(0, keptBytes);
  return new TextDecoder("utf-8", { fatal: false, ignoreBOM: true })
    .decode(first)
    .replace(controls, escaped);
}

import { FormatRegistry, Type } from "@sinclair/typebox";
import { ValidationError as ElysiaValidationError, t } from "elysia";

/** A plain JSON integer, for response schemas: no string twin in the OpenAPI document. */
export const integer = (options: Parameters<typeof Type.Integer>[0] = {}) => Type.Integer(options);

FormatRegistry.Set("decimal-integer", (value) => /^(0|[1-9][0-9]{0,15})$/.test(value));

/**
 * An integer read from the path or query string, written in decimal digits only, with a message
 * that names the field. Elysia's `t.Integer` takes any text `Number()` reads as an integer, so
 * `/api/orders/0x10`, `1e1`, `1.0`, `+16`, `016` and ` 16` all named order 16.
 */
export const urlInt = (
  where: "path" | "query",
  name: string,
  min: number,
  max: number,
  extra = {},
) => {
  const options = {
    ...extra,
    error: {
      path: `/${name}`,
      message: `${name} (${where}) must be an integer from ${min} to ${max}`,
    },
  };
  const range = Type.Integer({ minimum: min, maximum: max, ...options });
  return t
    .Transform(t.Union([t.String({ format: "decimal-integer" }), range], options))
    .Decode((value) => {
      const number = Number(value);
      if (number < min || number > max) throw new ElysiaValidationError("property", range, number);
      return number;
    })
    .Encode((value) => value);
};

declare module "elysia/type-system/types" {
  interface ElysiaTypeCustomErrors {
    field: { path: string; message: string };
  }
}

/**
 * N9: characters no text of either service carries: NUL and the other C0 controls, DEL, the C1
 * controls. N18: nor the bidirectional embedding, override and isolate controls (U+202A..U+202E,
 * U+2066..U+2069), the line and paragraph separators U+2028, U+2029 and U+FEFF, which make a
 * name read differently from what it is; (v5) nor the marks that print nothing and so let two
 * names that look alike differ: the soft hyphen U+00AD, the directional marks (ALM U+061C, LRM
 * U+200E, RLM U+200F), the zero-width space U+200B, the word joiner and the invisible operators
 * U+2060..U+2064. Letters of every script, emoji and the joiners U+200C, U+200D stay, and so do
 * the tag characters U+E0020..U+E007F: they spell the subdivision flags (England's, Scotland's)
 * that are emoji (docs/decisions.md). Body text that may span lines (a review's note) keeps tab,
 * line feed and carriage return; path, query and one-line fields keep none.
 */
const invisible =
  "\\u00ad\\u061c\\u200b\\u200e\\u200f\\u2060-\\u2064\\u202a-\\u202e\\u2066-\\u2069\\u2028\\u2029\\ufeff";
const refused = (multiline: boolean) =>
  `${multiline ? "\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f" : "\\u0000-\\u001f"}\\u007f-\\u009f${invisible}`;
const controls = new RegExp(`[${refused(false)}]`);
const controlsButLineBreaks = new RegExp(`[${refused(true)}]`);

/** N9, N18: well-formed Unicode (no lone surrogate) without control characters. */
export const isCleanText = (value: string, { multiline = false } = {}) =>
  value.isWellFormed() && !(multiline ? controlsButLineBreaks : controls).test(value);

/** One code point of clean text, as a regular expression (no `u` flag: TypeBox compiles without it). */
const codePoint = (multiline: boolean) =>
  `(?:[^${refused(multiline)}\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])`;

/**
 * Text PostgreSQL stores as sent (N9): no NUL (the insert would fail with a 500), no lone
 * surrogate (it would be stored, and answered, as U+FFFD), no control characters. Its length is
 * counted in characters (code points), as JSON Schema counts `minLength` and `maxLength`, not in
 * UTF-16 units: a 200-character name of emoji fits. TypeBox's own `maxLength` counts UTF-16
 * units, so the bounds are the pattern's; `codePoints` carries them into the OpenAPI document.
 */
export const text = (
  min: number,
  max: number,
  description?: string,
  { multiline = false, name }: { multiline?: boolean; name?: string } = {},
) =>
  t.String({
    pattern: `^${codePoint(multiline)}{${min},${max}}$`,
    codePoints: { min, max },
    ...(description ? { description } : {}),
    ...(name
      ? {
          error: {
            path: `/${name}`,
            message: `${name} must be ${min} to ${max} characters of text without control characters`,
          },
        }
      : {}),
  });

/**
 * One of `values`, with no default (N8): Elysia's `t.UnionEnum` defaults to its first value, and
 * Elysia fills a missing field with its default before validating, so a resolve body without
 * `action` was read as `apply`. A required field is never defaulted; an absent one is 400.
 */
export const choice = <const T extends readonly [string, ...string[]]>(
  values: T,
  options: Parameters<typeof t.UnionEnum>[1] = {},
) => {
  const schema = t.UnionEnum(values, options);
  delete (schema as { default?: unknown }).default;
  return schema;
};

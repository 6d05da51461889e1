import { Type } from "@sinclair/typebox";
import { t } from "elysia";

export { integer, urlInt } from "@commerce/shared/http/fields";

/**
 * A JSON body integer: strict, unlike Elysia's `t.Integer`, which also accepts numeric strings
 * such as "5" or "0x10" (E3 says wrong types are 400).
 */
export const bodyInt = (min: number, max: number, description?: string) =>
  Type.Integer({ minimum: min, maximum: max, ...(description ? { description } : {}) });

/**
 * Text PostgreSQL stores as sent: a NUL character would fail the insert with a 500, and a lone
 * surrogate (`"\ud800"` in JSON) would be stored, and answered, as U+FFFD.
 */
export const text = (min: number, max: number, description?: string) =>
  t.String({
    minLength: min,
    maxLength: max,
    pattern: "^(?:[^\\u0000\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])*$",
    ...(description ? { description } : {}),
  });

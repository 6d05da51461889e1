import { Type } from "@sinclair/typebox";

export { choice, integer, text, urlInt } from "@commerce/shared/platform/http/fields";

/**
 * A JSON body integer: strict, unlike Elysia's `t.Integer`, which also accepts numeric strings
 * such as "5" or "0x10" (E3 says wrong types are 400).
 */
export const bodyInt = (min: number, max: number, description?: string) =>
  Type.Integer({ minimum: min, maximum: max, ...(description ? { description } : {}) });

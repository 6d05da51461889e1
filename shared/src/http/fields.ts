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

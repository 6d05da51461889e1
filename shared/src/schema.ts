import { Type } from "@sinclair/typebox";
import { t } from "elysia";

/** A plain JSON integer, for response schemas: no string twin in the OpenAPI document. */
export const integer = (options: Parameters<typeof Type.Integer>[0] = {}) => Type.Integer(options);

/**
 * A JSON body integer: strict, unlike Elysia's `t.Integer`, which also accepts numeric strings
 * such as "5" or "0x10" (E3 says wrong types are 400).
 */
export const bodyInt = (min: number, max: number, description?: string) =>
  Type.Integer({ minimum: min, maximum: max, ...(description ? { description } : {}) });

/** An integer read from the path or query string, with a message that names the field. */
export const urlInt = (
  where: "path" | "query",
  name: string,
  min: number,
  max: number,
  extra = {},
) =>
  t.Integer({
    minimum: min,
    maximum: max,
    ...extra,
    error: {
      path: `/${name}`,
      message: `${name} (${where}) must be an integer from ${min} to ${max}`,
    },
  });

declare module "elysia/type-system/types" {
  interface ElysiaTypeCustomErrors {
    field: { path: string; message: string };
  }
}

/** Text PostgreSQL can store: a NUL character would fail the insert with a 500. */
export const text = (min: number, max: number, description?: string) =>
  t.String({
    minLength: min,
    maxLength: max,
    pattern: "^[^\\u0000]*$",
    ...(description ? { description } : {}),
  });

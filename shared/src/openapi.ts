import { openapi } from "@elysiajs/openapi";
import { Type } from "@sinclair/typebox";
import { t } from "elysia";

export const problemSchema = t.Object(
  {
    type: t.String(),
    title: t.String(),
    status: Type.Integer(),
    detail: t.String(),
    errors: t.Optional(t.Array(t.Object({ path: t.String(), message: t.String() }))),
  },
  { description: "RFC 9457 problem details (application/problem+json)" },
);

/** Error responses a route may answer, for its OpenAPI entry (the problem plugin writes them). */
export const problems = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((status) => [status, problemSchema])) as Record<
    number,
    typeof problemSchema
  >;

/** Swagger UI at /swagger and the OpenAPI 3 document at /swagger/json (O4). */
export function openapiDocs({
  title,
  description,
  bearer,
}: {
  title: string;
  description: string;
  bearer: boolean;
}) {
  return openapi({
    path: "/swagger",
    specPath: "/swagger/json",
    provider: "swagger-ui",
    documentation: {
      info: { title, version: "1.0.0", description },
      components: {
        ...(bearer
          ? {
              securitySchemes: {
                bearerAuth: { type: "http", scheme: "bearer", bearerFormat: "JWT" },
              },
            }
          : {}),
      },
    },
  });
}

import { toOpenAPISchema, withHeaders } from "@elysiajs/openapi/openapi";
import { Type } from "@sinclair/typebox";
import { Elysia, type TSchema, t } from "elysia";
import { swaggerUi } from "./swagger-ui";

export const problemSchema = t.Object(
  {
    type: t.String({ description: "Always about:blank: the status and title say what happened" }),
    title: t.String({ description: "The status's reason phrase" }),
    status: Type.Integer({ description: "The HTTP status, repeated" }),
    detail: t.String({ description: "What was wrong with this request" }),
    errors: t.Optional(
      t.Array(
        t.Object({
          path: t.String({ description: "JSON pointer to the field, e.g. /qty" }),
          message: t.String(),
        }),
        { description: "One entry per invalid field (400 only)" },
      ),
    ),
    code: t.Optional(
      t.String({
        description:
          "A stable name of the conflict, for a client that words it itself (409 only): " +
          "open_review, amount_not_accepted, move_not_possible, review_resolved, order_waits_behind",
      }),
    ),
  },
  { description: "RFC 9457 problem details" },
);

/** Error responses a route may answer, for its types and its OpenAPI entry (the problem plugin writes them). */
export const problems = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((status) => [status, problemSchema])) as Record<
    number,
    typeof problemSchema
  >;

/** The response headers the services send, documented once in `components.headers`. */
const headers = {
  "X-Request-Id": {
    description:
      "The request's id: the caller's own X-Request-Id when it is 1-128 characters of " +
      "A-Z a-z 0-9 . _ : -, else a new UUID. The service's log line for the request carries it.",
    required: true,
    schema: { type: "string", maxLength: 128 },
  },
  Location: {
    description: "The path of the resource this request created (or, replayed, created before)",
    required: true,
    schema: { type: "string", examples: ["/api/orders/42"] },
  },
  "Idempotent-Replayed": {
    description:
      "Present, as true, when this is the stored answer to an earlier request with the same Idempotency-Key",
    schema: { type: "string", enum: ["true"] },
  },
  "Retry-After": {
    description: "Seconds to wait before trying again",
    required: true,
    schema: { type: "integer", minimum: 1 },
  },
  "WWW-Authenticate": {
    description:
      'The Bearer challenge (RFC 6750), with error="invalid_token" when a token was sent but refused',
    required: true,
    schema: { type: "string", examples: ['Bearer realm="api", error="invalid_token"'] },
  },
  "RateLimit-Policy": {
    description:
      'The quota (draft-ietf-httpapi-ratelimit-headers): `"default";q=<burst>;w=<seconds>`, so at ' +
      "most q requests in any w seconds never meet a 429. Absent when rate limiting is off.",
    schema: { type: "string", examples: ['"default";q=100;w=2'] },
  },
  RateLimit: {
    description:
      'What is left of the quota: `"default";r=<requests left>;t=<seconds until the quota is whole again>`. ' +
      "Absent when rate limiting is off, and on a 401 before the caller is known.",
    schema: { type: "string", examples: ['"default";r=99;t=1'] },
  },
} as const;

export type ResponseHeader = keyof typeof headers;

/** A success response schema that also documents the headers it is sent with. */
export const withResponseHeaders = <S extends TSchema>(schema: S, ...names: ResponseHeader[]) =>
  withHeaders(schema, Object.fromEntries(names.map((name) => [name, t.String()])));

const problemTitles: Record<string, string> = {
  400: "Bad Request: the path, query string, headers or body are invalid (`errors` names each field)",
  401: "Unauthorized: credentials missing or refused",
  403: "Forbidden: the token lacks the admin scope",
  404: "Not Found",
  409: "Conflict: the request does not fit the resource's current state",
  413: "Payload Too Large",
  415: "Unsupported Media Type: the body must be application/json",
  422: "Unprocessable Content: the Idempotency-Key was used with another request",
  429: "Too Many Requests: the rate limit is spent",
  503: "Service Unavailable: a dependency is down; retry after Retry-After seconds",
};

// biome-ignore lint/suspicious/noExplicitAny: the generated document is JSON of any shape
type Json = Record<string, any>;

export type SecurityScheme = { name: string; scheme: Json; who: (roles: string[]) => string };

/**
 * D5: marks a schema as a named component of the document: every place it is used becomes a
 * `$ref` to `#/components/schemas/<name>`, so a generated client has one `Product`, one `Order`.
 * The mark is an annotation; validation ignores it.
 */
export const named = <S extends TSchema>(
  name: string,
  schema: S,
  annotations: { description?: string; examples?: unknown[] } = {},
): S => Object.assign(schema, annotations, { [componentMark]: name });

const componentMark = "x-component";

/** D5: each marked schema, once, in `components.schemas`; each use of it a `$ref` (children first). */
function extractComponents(node: unknown, components: Json): unknown {
  if (Array.isArray(node)) return node.map((item) => extractComponents(item, components));
  if (typeof node !== "object" || node === null) return node;
  const schema = node as Json;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema))
    if (key !== componentMark) out[key] = extractComponents(value, components);
  const name = schema[componentMark];
  if (typeof name !== "string") return out;
  components[name] ??= out;
  return { $ref: `#/components/schemas/${name}` };
}

export type DocumentOptions = {
  title: string;
  description: string;
  /** D5: what each tag is for. */
  tags?: { name: string; description: string }[];
  /**
   * D5: request bodies as the document states them, by operationId, where the route validates
   * more loosely to name each wrong field (an order's body is one of two shapes; checkout's is
   * optional).
   */
  requestBodies?: Record<string, Json>;
  /** D5: schemas named in `components.schemas` though no route's own schema uses them. */
  schemas?: Record<string, TSchema>;
  /** Paths whose responses carry the RateLimit headers. */
  rateLimited: (path: string) => boolean;
  security: SecurityScheme[];
};

/** Who may call an operation, in words, from its `security` requirement. */
function whoMayCall(security: Json[] | undefined, schemes: SecurityScheme[]): string {
  if (!security?.length) return "Anyone: no credentials.";
  return security
    .flatMap((requirement) =>
      Object.entries(requirement).map(([name, roles]) =>
        (schemes.find((s) => s.name === name)?.who ?? (() => name))(roles as string[]),
      ),
    )
    .join(" Or: ");
}

/**
 * Schema keywords that are Elysia's, not JSON Schema's: `error` (our custom validation message)
 * and `nullable` (OpenAPI 3.0; 3.1 says `type: [..., "null"]`, which is also there, and null in
 * the `enum` when there is one). A path or
 * query integer is validated as decimal text or a number (`anyOf`, format `decimal-integer`);
 * clients see a plain bounded integer. `properties` maps are walked into but never stripped.
 */
function cleanSchemas(node: unknown, inProperties = false): void {
  if (Array.isArray(node)) {
    for (const item of node) cleanSchemas(item);
    return;
  }
  if (typeof node !== "object" || node === null) return;
  const schema = node as Json;
  if (!inProperties) {
    delete schema.error;
    // N9: text's bounds are counted in characters, as JSON Schema's minLength and maxLength are.
    if (schema.codePoints) {
      schema.minLength = schema.codePoints.min;
      schema.maxLength = schema.codePoints.max;
      delete schema.codePoints;
    }
    // Elysia folds a nullable enum into `type: [..., "null"]` but leaves null out of the enum.
    if (schema.nullable && Array.isArray(schema.enum) && !schema.enum.includes(null))
      schema.enum.push(null);
    delete schema.nullable;
    const decimal = schema.anyOf?.findIndex((branch: Json) => branch.format === "decimal-integer");
    if (decimal >= 0) {
      const [integer] = (schema.anyOf as Json[]).filter((_, i) => i !== decimal);
      delete schema.anyOf;
      Object.assign(schema, { ...integer, ...schema });
      delete schema.error;
    }
  }
  // Examples are data, not schemas: a field named `error` in one is the resource's own.
  for (const [key, value] of Object.entries(schema))
    if (key !== "examples" && key !== "example") cleanSchemas(value, key === "properties");
}

const ref = (name: ResponseHeader) => ({ $ref: `#/components/headers/${name}` });

/**
 * Elysia's generated document made what clients and linters need (D1), in this one place rather
 * than route by route: no trailing slashes, one `Problem` as application/problem+json for every
 * error, the headers each response is sent with, a 204 without content, `security: []` where no
 * credentials are needed and, first in each description, who may call the operation.
 */
export function finishDocument(generated: Json, options: DocumentOptions): Json {
  // A copy: the generated paths hold the routes' live schemas, `error` messages and all.
  const paths: Json = JSON.parse(JSON.stringify(generated));
  const finished: Json = {};
  const used = new Set<ResponseHeader>();
  cleanSchemas(paths);
  const schemas: Json = {};
  for (const [name, schema] of Object.entries(options.schemas ?? {})) {
    const copy = JSON.parse(JSON.stringify(schema));
    cleanSchemas(copy);
    extractComponents({ ...copy, [componentMark]: name }, schemas);
  }
  for (const operations of Object.values(paths) as Json[])
    for (const operation of Object.values(operations) as Json[]) {
      const body = options.requestBodies?.[operation.operationId];
      if (body) operation.requestBody = body;
    }
  Object.assign(paths, extractComponents(paths, schemas));
  for (const [rawPath, operations] of Object.entries(paths)) {
    const path = rawPath.length > 1 ? rawPath.replace(/\/+$/, "") : rawPath;
    finished[path] = operations;
    for (const operation of Object.values(operations as Json) as Json[]) {
      operation.security ??= [];
      const who = whoMayCall(operation.security, options.security);
      operation.description = operation.description ? `${who}\n\n${operation.description}` : who;
      const bearer = operation.security.some((r: Json) => "bearerAuth" in r);
      // D6: every route answers 400 to path or query text with NUL or control characters (N9).
      operation.responses ??= {};
      operation.responses["400"] ??= {};
      for (const [status, response] of Object.entries(operation.responses ?? {}) as [
        string,
        Json,
      ][]) {
        const names = new Set<ResponseHeader>(["X-Request-Id"]);
        for (const name of Object.keys(response.headers ?? {})) names.add(name as ResponseHeader);
        if (options.rateLimited(path)) names.add("RateLimit-Policy").add("RateLimit");
        if (Number(status) >= 400) {
          response.description = problemTitles[status] ?? "Error";
          response.content = {
            "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } },
          };
          if (status === "401" && bearer) names.add("WWW-Authenticate");
          if (status === "429" || status === "503") names.add("Retry-After");
        }
        if (status === "204") delete response.content;
        response.headers = Object.fromEntries([...names].map((name) => [name, ref(name)]));
        for (const name of names) used.add(name);
      }
    }
  }

  return {
    openapi: "3.1.1",
    info: { title: options.title, version: "1.0.0", description: options.description },
    servers: [{ url: "/", description: "The server that serves this document" }],
    ...(options.tags ? { tags: options.tags } : {}),
    paths: finished,
    components: {
      schemas: { Problem: problemSchema, ...sortedByName(schemas) },
      headers: Object.fromEntries([...used].map((name) => [name, headers[name]])),
      securitySchemes: Object.fromEntries(options.security.map((s) => [s.name, s.scheme])),
    },
  };
}

const sortedByName = (schemas: Json): Json =>
  Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)));

/** The OpenAPI document at /swagger/json, built from the app's routes, and Swagger UI at /swagger. */
export function openapiDocs(options: DocumentOptions) {
  const specPath = "/swagger/json";
  const docs = new Elysia({ name: "openapi-docs" });
  let cached: { routes: number; document: Json } | undefined;
  return docs.use(swaggerUi({ title: options.title, specPath })).get(
    specPath,
    () => {
      // Routes are added after this plugin; the document is built once they are all there.
      const routes = docs.routes.length;
      if (cached?.routes !== routes)
        cached = { routes, document: finishDocument(toOpenAPISchema(docs).paths, options) };
      return cached.document;
    },
    { detail: { hide: true } },
  );
}

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SwaggerParser from "@apidevtools/swagger-parser";
import {
  type ApiHarness,
  type PaymentsHarness,
  startApi,
  startPayments,
} from "@commerce/testing/in-process";
import { providersEnv } from "@commerce/testing/provider-requests";

setDefaultTimeout(60_000);

const root = new URL("../../..", import.meta.url).pathname;

let api: ApiHarness;
let payments: PaymentsHarness;
const documents: Record<"api" | "payments", any> = { api: undefined, payments: undefined };

beforeAll(async () => {
  // Stripe and Adyen on, so their routes are linted too.
  [api, payments] = await Promise.all([startApi(), startPayments({ env: providersEnv })]);
  documents.api = (await api.call("GET", "/swagger/json")).json;
  const served = await payments.app().handle(new Request("http://localhost/swagger/json"));
  documents.payments = await served.json();
});
afterAll(() => Promise.all([api.close(), payments.close()]));

type Operation = { path: string; method: string; operation: any };
const operationsOf = (document: any): Operation[] =>
  Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods as object).map(([method, operation]) => ({ path, method, operation })),
  );

/** Runs the Redocly CLI with the committed redocly.yaml on one document; its problems as JSON. */
async function redoclyLint(document: object) {
  const file = join(mkdtempSync(join(tmpdir(), "openapi-")), "openapi.json");
  writeFileSync(file, JSON.stringify(document));
  const cli = Bun.spawn(
    [
      "node",
      `${root}node_modules/@redocly/cli/bin/cli.js`,
      "lint",
      file,
      "--config",
      `${root}redocly.yaml`,
      "--format",
      "json",
    ],
    {
      cwd: root,
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, REDOCLY_TELEMETRY: "off" },
    },
  );
  const output = await new Response(cli.stdout).text();
  await cli.exited;
  return JSON.parse(output.slice(output.indexOf("{"))) as {
    totals: { errors: number; warnings: number };
    problems: { ruleId: string; message: string; severity: string }[];
  };
}

/**
 * D6: Spectral's CLI with the committed .spectral.yaml (`spectral:oas`) on one document; its
 * problems as JSON (severity 0 is an error, 1 a warning).
 */
async function spectralLint(document: object) {
  const file = join(mkdtempSync(join(tmpdir(), "openapi-")), "openapi.json");
  writeFileSync(file, JSON.stringify(document));
  const cli = Bun.spawn(
    [
      "node",
      `${root}node_modules/@stoplight/spectral-cli/dist/index.js`,
      "lint",
      file,
      "--ruleset",
      `${root}.spectral.yaml`,
      "--format",
      "json",
      "--quiet",
    ],
    { cwd: root, stdout: "pipe", stderr: "pipe" },
  );
  const output = await new Response(cli.stdout).text();
  await cli.exited;
  return JSON.parse(output.slice(output.indexOf("["))) as {
    code: string;
    message: string;
    path: string[];
    severity: number;
  }[];
}

describe.each(["api", "payments"] as const)("the %s OpenAPI document", (service) => {
  test("D6: spectral lint (spectral:oas) reports no error", async () => {
    const problems = await spectralLint(documents[service]);
    const errors = problems.filter((p) => p.severity === 0);
    expect(errors.map((p) => `${p.code} ${p.path.join(".")}: ${p.message}`)).toEqual([]);
  });

  test("D6: ids and amounts are typed integer, never string or integer", () => {
    const mixed: string[] = [];
    const visit = (node: unknown, at: string) => {
      if (typeof node !== "object" || node === null) return;
      const schema = node as { type?: unknown; anyOf?: { type?: string }[] };
      const types = Array.isArray(schema.type)
        ? schema.type
        : (schema.anyOf?.map((s) => s.type) ?? []);
      if (types.includes("integer") && types.includes("string")) mixed.push(at);
      for (const [key, value] of Object.entries(node)) visit(value, `${at}/${key}`);
    };
    visit(documents[service], "");
    expect(mixed).toEqual([]);
  });

  test("D6: every request body has an example, every operation that can answer 400 documents it", () => {
    const missing: string[] = [];
    for (const { path, method, operation } of operationsOf(documents[service])) {
      // N9: path and query text is checked on every route, so every operation can answer 400.
      if (!("400" in operation.responses)) missing.push(`400 ${method} ${path}`);
      const body = operation.requestBody?.$ref
        ? documents[service].components.requestBodies[operation.requestBody.$ref.split("/").pop()]
        : operation.requestBody;
      const content = body?.content?.["application/json"];
      const schema = content?.schema?.$ref
        ? documents[service].components.schemas[content.schema.$ref.split("/").pop()]
        : content?.schema;
      if (content && !(content.example ?? content.examples ?? schema?.examples ?? schema?.example))
        missing.push(`example ${method} ${path}`);
    }
    expect(missing).toEqual([]);
  });

  test("D1: is valid OpenAPI 3.1 for swagger-parser", async () => {
    const document = structuredClone(documents[service]);
    expect(document.openapi).toStartWith("3.1.");
    await SwaggerParser.validate(document);
  });

  test("D1: redocly lint (recommended rules, redocly.yaml) reports no error and no warning", async () => {
    const report = await redoclyLint(documents[service]);
    expect(report.problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(report.totals.errors).toBe(0);
  });

  test("D1: no trailing slash, every error is the shared Problem as application/problem+json", () => {
    const document = documents[service];
    expect(document.components.schemas.Problem.required).toEqual([
      "type",
      "title",
      "status",
      "detail",
    ]);
    expect(document.servers.length).toBeGreaterThan(0);
    for (const { path, operation } of operationsOf(document)) {
      expect(path === "/" || !path.endsWith("/")).toBe(true);
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        if (Number(status) >= 400)
          expect(response.content).toEqual({
            "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } },
          });
        if (status === "204") expect(response.content).toBeUndefined();
        expect(response.headers["X-Request-Id"]).toEqual({
          $ref: "#/components/headers/X-Request-Id",
        });
        if (status === "429" || status === "503")
          expect(response.headers["Retry-After"]).toBeDefined();
      }
    }
  });

  test("D1: every operation says who may call it; probes need no credentials; no rule ids", () => {
    const document = documents[service];
    for (const { path, operation } of operationsOf(document)) {
      expect(operation.description).toMatch(
        /^(Anyone|Any customer|Admin only|The payment provider)/,
      );
      const open = ["/health", "/ready", "/metrics"].includes(path) || path === "/console/session";
      // The console's sign-in exchange: the code in its body is the credential (N16).
      if (open) expect(operation.security).toEqual([]);
      else expect(operation.security.length).toBeGreaterThan(0);
    }
    // Ids such as W2 or R4 belong to the behaviour docs, not to what clients read.
    expect(JSON.stringify(document)).not.toMatch(/\b[A-Z]{1,2}[0-9]{1,2}\b/);
    // Elysia's own keywords, not property names (a delivery attempt has an `error` field).
    const keywords = JSON.stringify(document, (key, value) =>
      key === "properties" ? Object.values(value) : value,
    );
    expect(keywords).not.toMatch(/decimal-integer|"nullable"|"error":\{/);
  });
});

describe("what each document says of its own service", () => {
  test("D1: the api documents its token, the headers it sends, and plain integer ids", () => {
    const document = documents.api;
    expect(document.info.description).toContain("npm run token -- --sub alice");
    expect(document.info.description).toContain("AUTH_JWT_SECRET");
    const paths = document.paths;
    expect(Object.keys(paths)).toEqual(
      expect.arrayContaining(["/api/products", "/api/orders", "/api/cart", "/api/cart/checkout"]),
    );
    expect(paths["/api/products"].post.security).toEqual([{ bearerAuth: ["admin"] }]);
    expect(paths["/api/products"].post.responses["201"].headers.Location).toBeDefined();
    const place = paths["/api/orders"].post.responses["201"].headers;
    expect(Object.keys(place)).toEqual(
      expect.arrayContaining(["Location", "Idempotent-Replayed", "RateLimit", "RateLimit-Policy"]),
    );
    expect(paths["/api/cart"].get.responses["401"].headers["WWW-Authenticate"]).toBeDefined();
    expect(paths["/health"].get.responses["200"].headers.RateLimit).toBeUndefined();
    expect(paths["/api/orders/{order_id}"].get.parameters[0].schema).toEqual({
      type: "integer",
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
    });
    expect(paths["/api/products"].post.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/NewProduct",
    });
    expect(document.components.schemas.NewProduct.examples).toHaveLength(1);
  });

  test("D1, G1: payments documents X-Signature (and Stripe's, Adyen's credentials) as the webhooks' credentials, their rate limit, and the operators' bearer token", () => {
    const document = documents.payments;
    expect(document.components.securitySchemes).toEqual({
      paymentSignature: expect.objectContaining({
        type: "apiKey",
        in: "header",
        name: "x-signature",
      }),
      stripeSignature: expect.objectContaining({
        type: "apiKey",
        in: "header",
        name: "stripe-signature",
      }),
      adyenHmac: expect.objectContaining({ type: "http", scheme: "basic" }),
      bearerAuth: expect.objectContaining({ type: "http", scheme: "bearer" }),
    });
    for (const provider of ["stripe", "adyen"])
      expect(
        document.paths[`/api/webhooks/${provider}`].post.responses["200"].headers[
          "RateLimit-Policy"
        ],
      ).toBeDefined();
    const webhook = document.paths["/api/webhooks/payment"].post;
    expect(webhook.security).toEqual([{ paymentSignature: [] }]);
    expect(webhook.responses["200"].headers["RateLimit-Policy"]).toBeDefined();
    expect(webhook.responses["401"].headers["WWW-Authenticate"]).toBeUndefined();
    expect(webhook.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/PaymentNotification",
    });
    expect(document.components.schemas.PaymentNotification.examples[0]).toMatchObject({
      event: "payment.succeeded",
    });
  });
});

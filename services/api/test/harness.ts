import { connectDatabase, migrateSchema } from "@commerce/shared/database";
import { createLogger } from "@commerce/shared/logger";
import { messageTopology } from "@commerce/shared/messages";
import { Metrics } from "@commerce/shared/metrics";
import { RateLimiter } from "@commerce/shared/rate-limit";
import { testDatabaseUrl, unique } from "@commerce/shared/testing";
import { SignJWT } from "jose";
import { type ApiDeps, createApp } from "../src/app";
import { createDatabase, migrations } from "../src/db";
import { createTokenVerifier } from "../src/modules/auth/service";

export const testSecret = "test-secret-that-is-at-least-32-characters";

type Claims = {
  sub?: string;
  scope?: string;
  exp?: number | string;
  nbf?: number;
  iss?: string;
  aud?: string;
};

/** An HS256 token; `exp` defaults to one hour from now. */
export async function token(claims: Claims = {}, secret = testSecret): Promise<string> {
  const { sub, exp, nbf, iss, aud, ...rest } = claims;
  let jwt = new SignJWT(rest).setProtectedHeader({ alg: "HS256" }).setIssuedAt();
  if (sub !== undefined) jwt = jwt.setSubject(sub);
  jwt = jwt.setExpirationTime(exp ?? "1h");
  if (nbf !== undefined) jwt = jwt.setNotBefore(nbf);
  if (iss) jwt = jwt.setIssuer(iss);
  if (aud) jwt = jwt.setAudience(aud);
  return jwt.sign(new TextEncoder().encode(secret));
}

export type Call = {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
};

/** The api built on the real database with its own message subjects, as `main.ts` builds it. */
export async function startApi(overrides: Partial<ApiDeps> = {}) {
  const sql = connectDatabase(testDatabaseUrl, { max: 5 });
  await migrateSchema(sql, { schema: "api", migrations });
  const db = createDatabase(sql);
  const logLines: string[] = [];
  const deps: ApiDeps = {
    sql,
    db,
    verifyToken: createTokenVerifier({ jwtSecret: testSecret }),
    rateLimiter: new RateLimiter({ ratePerSecond: 0, burst: 0 }),
    storeCurrency: "USD",
    topology: messageTopology(unique("t")),
    logger: createLogger("debug", { service: "api" }, (line) => logLines.push(line)),
    metrics: new Metrics(),
    outboxWritten: () => {},
    ...overrides,
  };
  const app = createApp(deps);

  const call = async (method: string, path: string, { token, body, headers = {} }: Call = {}) => {
    const init: RequestInit = { method, headers: { ...headers } };
    const h = init.headers as Record<string, string>;
    if (token) h.authorization = `Bearer ${token}`;
    if (body !== undefined) {
      h["content-type"] ??= "application/json";
      init.body = typeof body === "string" ? body : JSON.stringify(body);
      // As an HTTP client would; Request objects built in-process carry no length of their own.
      h["content-length"] ??= String(Buffer.byteLength(init.body));
    }
    const response = await app.handle(new Request(`http://localhost${path}`, init));
    const text = await response.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, text, json };
  };

  const customer = async (sub = unique("cust")) => ({ sub, token: await token({ sub }) });
  const admin = async () => token({ sub: unique("admin"), scope: "admin" });

  /** A product in a category of its own, so list assertions see only this test's rows. */
  const product = async (fields: { name?: string; price?: number; category?: string } = {}) => {
    const res = await call("POST", "/api/products", {
      token: await admin(),
      body: { name: "Mug", price: 1299, category: unique("cat"), ...fields },
    });
    if (res.status !== 201) throw new Error(`product setup failed: ${res.status} ${res.text}`);
    return res.json as { id: number; name: string; price: number; category: string };
  };

  return { app, sql, db, deps, call, customer, admin, product, logLines, close: () => sql.end() };
}

export type ApiHarness = Awaited<ReturnType<typeof startApi>>;

export const problemType = "application/problem+json";

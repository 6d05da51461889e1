import { afterAll } from "bun:test";
import { loadConfig as loadApiConfig } from "../../services/api/src/config";
import { createService as createApiService } from "../../services/api/src/create-service";
import type { ApiDeps } from "../../services/api/src/deps";
import type { DispatcherOptions } from "../../services/api/src/modules/webhooks/dispatcher";
import { createApp as createPaymentsApp } from "../../services/payments/src/app";
import { loadConfig as loadPaymentsConfig } from "../../services/payments/src/config";
import { createService as createPaymentsService } from "../../services/payments/src/create-service";
import type { PaymentsDeps } from "../../services/payments/src/deps";
import { jwtSecret, testDatabaseUrl, testNatsUrl, token, unique, webhookSecret } from "./basics";

/**
 * The settings of an in-process test service: the real database and NATS, its own NATS names
 * (a unique NATS_PREFIX), no rate limit. `env` adds to or overrides them.
 */
const testEnv = (env: Record<string, string>) => ({
  DATABASE_URL: testDatabaseUrl,
  NATS_URL: testNatsUrl,
  NATS_PREFIX: unique("t"),
  AUTH_JWT_SECRET: jwtSecret,
  PAYMENT_WEBHOOK_SECRETS: webhookSecret,
  RATE_LIMIT_RPS: "0",
  // N5's limits are off: a test's customer places as many orders as it needs (holds.test.ts
  // turns them on).
  HOLD_MAX_ORDERS: "0",
  HOLD_MAX_UNITS: "0",
  LOG_LEVEL: "debug",
  ...env,
});

type InProcessOptions<Deps> = {
  env?: Record<string, string>;
  /** Parts of the routes' dependencies to replace. */
  replace?: Partial<Deps>;
};

type ApiOptions = InProcessOptions<ApiDeps> & { webhookDispatcher?: DispatcherOptions };

export type Call = {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
};

/**
 * The api as `main.ts` builds it (`createService`), not listening: requests go through
 * `app.handle`. NATS, the relay and the consumer are built but not started.
 */
export async function startApi({ env = {}, replace = {}, webhookDispatcher }: ApiOptions = {}) {
  const logLines: string[] = [];
  const service = await createApiService(loadApiConfig(testEnv(env)), {
    databasePool: 5,
    logSink: (line) => logLines.push(line),
    // NATS is not started in-process: readiness is the database alone.
    replace: { outboxWritten: () => {}, readiness: [], ...replace },
    webhookDispatcher,
  });
  const { app, deps } = service;

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

  return {
    service,
    app,
    sql: deps.sql,
    db: deps.db,
    deps,
    call,
    customer,
    admin,
    product,
    logLines,
    close: () => service.stop(),
  };
}

export type ApiHarness = Awaited<ReturnType<typeof startApi>>;

/** An in-process api and an admin token for the calling test file, closed after its tests. */
export async function apiForFile(options: ApiOptions = {}) {
  const api = await startApi(options);
  afterAll(() => api.close());
  return { api, admin: await api.admin() };
}

/**
 * The payments service as `main.ts` builds it (`createService`), not listening. `app(replace)`
 * builds another app on the same dependencies with some replaced (a frozen rate limiter, a
 * dead database), without a new connection pool.
 */
export async function startPayments({
  env = {},
  replace = {},
}: InProcessOptions<PaymentsDeps> = {}) {
  const logLines: string[] = [];
  const service = await createPaymentsService(loadPaymentsConfig(testEnv(env)), {
    databasePool: 20,
    logSink: (line) => logLines.push(line),
    // NATS is not started in-process: readiness is the database alone.
    replace: { outboxWritten: () => {}, readiness: [], ...replace },
  });
  const { deps } = service;
  return {
    service,
    sql: deps.sql,
    topology: deps.topology,
    logLines,
    app: (more: Partial<PaymentsDeps> = {}) => createPaymentsApp({ ...deps, ...more }),
    /** Removes this harness's outbox rows, so no relay keeps retrying subjects without a stream. */
    async close() {
      await deps.sql`delete from payments.outbox where subject = ${deps.topology.payments.orderPaid}`;
      await service.stop();
    },
  };
}

export type PaymentsHarness = Awaited<ReturnType<typeof startPayments>>;

/** An in-process payments service for the calling test file, closed after its tests. */
export async function paymentsForFile() {
  const payments = await startPayments();
  afterAll(() => payments.close());
  return payments;
}

export const problemType = "application/problem+json";

import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import {
  eventually,
  freePort,
  jwtSecret,
  signToken,
  testDatabaseUrl,
  testNatsUrl,
  unique,
} from "@commerce/testing/basics";
import { runToEnd, ServiceProcess, serviceCommand } from "@commerce/testing/launch";
import { type Stack, startStack, succeeded } from "@commerce/testing/processes";
import postgres from "postgres";

setDefaultTimeout(120_000);

// N14: the deployment's roles, made by the shipped script (deploy/postgres-init/service-roles.sql),
// in a database of their own, with names of their own (removed afterwards).
const script = new URL("../../deploy/postgres-init/service-roles.sql", import.meta.url).pathname;
const adopt = new URL("../../deploy/postgres-init/adopt-schemas.sql", import.meta.url).pathname;
const tag = unique("n14")
  .toLowerCase()
  .replace(/[^a-z0-9]/g, "");
const database = `wt_${tag}`;
const roles = { api: `${tag}_api`, payments: `${tag}_payments` };
const serverUrl = new URL(testDatabaseUrl);
const urlFor = (user: string | undefined, db: string) => {
  const url = new URL(serverUrl);
  url.username = user ?? serverUrl.username;
  url.pathname = `/${db}`;
  return url.toString();
};
const admin = postgres(testDatabaseUrl, { max: 1, onnotice: () => {} });
let stack: Stack;

async function psql(args: string[], db = database) {
  const { out, err, code } = await runToEnd(["psql", "-X", "-q", urlFor(undefined, db), ...args]);
  if (code !== 0) throw new Error(`psql failed: ${err}${out}`);
}

/** A connection as one service's role, and what a statement answers (rows or the error code). */
async function as(role: keyof typeof roles, statement: string) {
  const sql = postgres(urlFor(roles[role], database), { max: 1, onnotice: () => {} });
  try {
    return await sql.unsafe(statement).then(
      (rows) => ({ rows: rows.length }),
      (error: { code?: string }) => ({ error: error.code }),
    );
  } finally {
    await sql.end();
  }
}

beforeAll(async () => {
  await admin.unsafe(`create database ${database}`);
  await psql([
    ...["-v", `api_role=${roles.api}`, "-v", `api_password=${unique("pw")}`],
    ...["-v", `payments_role=${roles.payments}`, "-v", `payments_password=${unique("pw")}`],
    "-f",
    script,
  ]);
  stack = await startStack({
    databaseUrl: urlFor(undefined, database),
    serviceEnv: {
      api: { DATABASE_URL: urlFor(roles.api, database) },
      payments: { DATABASE_URL: urlFor(roles.payments, database) },
    },
  });
});

afterAll(async () => {
  await stack?.stop().catch(() => {});
  await admin.unsafe(`drop database if exists ${database} with (force)`).catch(() => {});
  await admin.unsafe(`drop database if exists ${database}_old with (force)`).catch(() => {});
  for (const role of Object.values(roles))
    await admin.unsafe(`drop role if exists ${role}`).catch(() => {});
  await admin.end();
});

describe("PostgreSQL roles", () => {
  test("N14: each service runs as its own role, not a superuser, and owns its schema: an order is paid end to end", async () => {
    const order = await stack.newOrder();
    expect((await stack.notify(succeeded(order))).status).toBe(200);
    await stack.paid(order.order_id);
    const owners = await stack.sql<{ schema: string; owner: string; superuser: boolean }[]>`
      select n.nspname as schema, r.rolname as owner, r.rolsuper as superuser
      from pg_namespace n join pg_roles r on r.oid = n.nspowner
      where n.nspname in ('api', 'payments') order by 1`;
    expect([...owners]).toEqual([
      { schema: "api", owner: roles.api, superuser: false },
      { schema: "payments", owner: roles.payments, superuser: false },
    ]);
  });

  test("N14: the api's role cannot read or change payments.*, nor the payments role api.*", async () => {
    const denied = { error: "42501" };
    expect(await as("api", "select * from payments.notifications")).toEqual(denied);
    expect(await as("api", "delete from payments.outbox")).toEqual(denied);
    expect(await as("api", "select * from drizzle.payments_migrations")).toEqual(denied);
    expect(await as("payments", "select * from api.orders")).toEqual(denied);
    expect(await as("payments", "update api.orders set status = 'paid'")).toEqual(denied);
    expect(await as("payments", "delete from drizzle.api_migrations")).toEqual(denied);
    // Nor can either make itself more.
    expect(await as("api", `alter role ${roles.api} superuser`)).toEqual(denied);
    expect(await as("payments", "create role intruder login")).toEqual(denied);
    expect(await as("api", "select * from pg_read_file('/etc/passwd')")).toEqual(denied);
    // Its own schema works.
    expect(await as("api", "select 1 from api.orders limit 1")).not.toHaveProperty("error");
    expect(await as("payments", "select 1 from payments.notifications limit 1")).not.toHaveProperty(
      "error",
    );
  });

  test("N14: neither role can plant a schema or a function the other's statements would resolve to", async () => {
    const denied = { error: "42501" };
    // The review's attack: a schema named like the other role (first in the default search_path
    // "$user", public) holding an exact-signature jsonb_build_object, preferred to the variadic
    // built-in in every order event; and the reverse.
    const plant = (schema: string) => `create schema "${schema}"`;
    const shadow = (schema: string) =>
      `create function "${schema}".jsonb_build_object(text, text, text, text) returns jsonb
       language sql as $$ select '{}'::jsonb $$`;
    expect(await as("payments", plant(roles.api))).toEqual(denied);
    expect(await as("api", plant(roles.payments))).toEqual(denied);
    for (const schema of ["public", "drizzle", "api"])
      expect(await as("payments", shadow(schema))).toEqual(denied);
    for (const schema of ["public", "drizzle", "payments"])
      expect(await as("api", shadow(schema))).toEqual(denied);
    expect(await as("payments", "create table public.orders (id int)")).toEqual(denied);
    expect(await as("api", "create table drizzle.x (id int)")).toEqual(denied);
    // Each role's names resolve in its own schema, then the built-ins, whatever connects.
    const searchPath = async (role: keyof typeof roles) => {
      const sql = postgres(urlFor(roles[role], database), { max: 1, onnotice: () => {} });
      try {
        return (await sql<{ search_path: string }[]>`show search_path`)[0]?.search_path;
      } finally {
        await sql.end();
      }
    };
    expect(await searchPath("api")).toBe("api, pg_catalog");
    expect(await searchPath("payments")).toBe("payments, pg_catalog");
    // And both services still work as their roles after the attempts.
    const order = await stack.newOrder();
    expect((await stack.notify(succeeded(order))).status).toBe(200);
    await stack.paid(order.order_id);
  });

  // N14 (v5): the api with the hold limits on, started while the payments role holds its old keys.
  let holding: ServiceProcess;
  const placer = unique("cust");

  /** A placement by `placer` through the `holding` replica: its status and how long it took. */
  async function place() {
    const product = await stack.callApi("POST", "/api/products", stack.admin, {
      name: "Lamp",
      price: 1999,
      category: unique("c"),
    });
    const started = performance.now();
    const response = await fetch(`${holding.url}/api/orders`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${await signToken(placer)}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ product_id: product.json.id, qty: 1 }),
      signal: AbortSignal.timeout(20_000),
    });
    return {
      status: response.status,
      retryAfter: response.headers.get("retry-after"),
      ms: performance.now() - started,
    };
  }

  test("N14 (v5): the payments role holding the api's former advisory keys (its migrations, a customer's placements) stops neither an api starting nor that customer's order; the locks the api waits on now are out of its reach", async () => {
    const intruder = postgres(urlFor(roles.payments, database), { max: 1, onnotice: () => {} });
    try {
      // Any role may take any advisory key: these are the ones the api used to wait on.
      await intruder`select pg_advisory_lock(hashtext('migrate:api'))`;
      await intruder`select pg_advisory_lock(5005, hashtext(${placer}))`;
      const denied = { error: "42501" };
      const locking = "begin; lock table api.migration_lock in exclusive mode; commit";
      expect(await as("payments", locking)).toEqual(denied);
      expect(await as("payments", "select * from api.placement_locks for update")).toEqual(denied);
      holding = await stack.replica("api", {
        DATABASE_URL: urlFor(roles.api, database),
        HOLD_MAX_ORDERS: "5",
      });
      const placed = await place();
      expect(placed.status).toBe(201);
      expect(placed.ms).toBeLessThan(3_000);
    } finally {
      await intruder.end();
    }
  });

  test("N14 (v5): a placement waiting for another placement of its customer gives up after its lock timeout with a 503 and Retry-After, and goes through once the other is done", async () => {
    // Another placement of the same customer, stuck inside its transaction holding the row.
    const other = postgres(urlFor(roles.api, database), { max: 1, onnotice: () => {} });
    const locked = Promise.withResolvers<void>();
    const done = Promise.withResolvers<void>();
    const transaction = other.begin(async (tx) => {
      await tx`insert into api.placement_locks (customer_id) values (${placer})
        on conflict (customer_id) do update set customer_id = excluded.customer_id`;
      locked.resolve();
      await done.promise;
    });
    try {
      await locked.promise;
      const waited = await place();
      expect(waited.status).toBe(503);
      expect(waited.retryAfter).toBe("1");
      // placement_locks' 5 s, not forever (nor the client's 20 s).
      expect(waited.ms).toBeGreaterThan(4_500);
      expect(waited.ms).toBeLessThan(10_000);
    } finally {
      done.resolve();
      await transaction;
      await other.end();
    }
    expect((await place()).status).toBe(201);
  });

  test("N14 (v5): an api starting while its migration lock is held elsewhere gives up the wait after 10 s, stays up and not ready (/health 200, /ready 503), and is ready once the lock is free", async () => {
    const holder = postgres(urlFor(roles.api, database), { max: 1, onnotice: () => {} });
    const locked = Promise.withResolvers<void>();
    const done = Promise.withResolvers<void>();
    const transaction = holder.begin(async (tx) => {
      await tx`lock table api.migration_lock in exclusive mode`;
      locked.resolve();
      await done.promise;
    });
    await locked.promise;
    const api = new ServiceProcess({
      name: "api",
      port: await freePort(),
      command: serviceCommand("api", process.env.E2E_BINARIES === "1"),
      env: {
        DATABASE_URL: urlFor(roles.api, database),
        NATS_URL: testNatsUrl,
        NATS_PREFIX: unique("n14"),
        AUTH_JWT_SECRET: jwtSecret,
        LOG_LEVEL: "warn",
      },
      readyTimeoutMs: 90_000,
    });
    const ready = api.start();
    try {
      const started = performance.now();
      await eventually(
        async () =>
          api
            .logLines()
            .some(
              (line) => line.msg === "migration lock held elsewhere; migrations will be retried",
            )
            ? true
            : undefined,
        40_000,
        "the api to give up waiting for its migration lock",
      );
      expect(performance.now() - started).toBeGreaterThan(9_000);
      const status = (path: string) => fetch(`${api.url}${path}`).then((r) => r.status);
      expect([await status("/health"), await status("/ready")]).toEqual([200, 503]);
      done.resolve();
      await transaction;
      await ready;
      expect(await status("/ready")).toBe(200);
    } finally {
      done.resolve();
      await api.stop();
      await ready.catch(() => {});
      await holder.end();
    }
  });

  test("N14: a database the services made as the superuser is handed to their roles by adopt-schemas.sql", async () => {
    // Before roles: both services migrate and run as the superuser, as compose did.
    const old = `${database}_old`;
    await admin.unsafe(`create database ${old}`);
    const before = await startStack({ databaseUrl: urlFor(undefined, old) });
    const first = await before.newOrder();
    await before.stop();
    const roleArgs = ["-v", `api_role=${roles.api}`, "-v", `payments_role=${roles.payments}`];
    // The roles exist already (made in this server by beforeAll): grant them this database too.
    await psql(
      [
        "-c",
        `grant connect, create on database ${old} to ${roles.api}, ${roles.payments}; create schema if not exists drizzle; grant usage, create on schema drizzle to ${roles.api}, ${roles.payments}`,
      ],
      old,
    );
    await psql([...roleArgs, "-f", adopt], old);
    await psql([...roleArgs, "-f", adopt], old); // idempotent
    // What the first service-roles.sql gave is taken back.
    const oldUrl = (role: keyof typeof roles) => urlFor(roles[role], old);
    for (const role of ["api", "payments"] as const) {
      const sql = postgres(oldUrl(role), { max: 1, onnotice: () => {} });
      const planted = await sql.unsafe(`create schema "${roles[role]}x"`).then(
        () => "created",
        (error: { code?: string }) => error.code,
      );
      await sql.end();
      expect(planted).toBe("42501");
    }
    const after = await startStack({
      databaseUrl: urlFor(undefined, old),
      serviceEnv: {
        api: { DATABASE_URL: urlFor(roles.api, old) },
        payments: { DATABASE_URL: urlFor(roles.payments, old) },
      },
    });
    try {
      expect((await after.notify(succeeded(first))).status).toBe(200);
      await after.paid(first.order_id);
      const order = await after.newOrder();
      expect((await after.notify(succeeded(order))).status).toBe(200);
      await after.paid(order.order_id);
      const foreign = await after.sql`
        select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace
        join pg_roles r on r.oid = c.relowner
        where n.nspname in ('api', 'payments') and r.rolname <> case n.nspname
          when 'api' then ${roles.api} else ${roles.payments} end`;
      expect([...foreign]).toEqual([]);
    } finally {
      await after.stop();
    }
  });
});

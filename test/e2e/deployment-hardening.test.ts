import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { networkInterfaces } from "node:os";
import { gaugeCacheMs } from "@commerce/shared/platform/metrics";
import { eventually, jwtSecret, testDatabaseUrl, token, unique } from "@commerce/testing/basics";
import { runToEnd } from "@commerce/testing/launch";
import { startNpmStart } from "@commerce/testing/npm-start";
import { type Stack, startStack, succeeded } from "@commerce/testing/processes";

setDefaultTimeout(90_000);

const root = new URL("../..", import.meta.url).pathname;
const metricsToken = unique("scrape-token-0123456789");

describe("N4: /metrics is for the scraper", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { METRICS_TOKEN: metricsToken } });
  });
  afterAll(() => stack?.stop());

  test("N4: without the scraper's token both services answer 401; with it, the metrics", async () => {
    for (const service of [stack.api, stack.payments]) {
      const anonymous = await fetch(`${service.url}/metrics`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get("content-type")).toStartWith("application/problem+json");
      expect(await anonymous.text()).not.toContain("http_requests_total");
      // An admin's bearer token is not the scraper's.
      const wrong = await fetch(`${service.url}/metrics`, {
        headers: { authorization: `Bearer ${stack.admin}` },
      });
      expect(wrong.status).toBe(401);
      const prefix = await fetch(`${service.url}/metrics`, {
        headers: { authorization: `Bearer ${metricsToken.slice(0, -1)}` },
      });
      expect(prefix.status).toBe(401);
      const scraper = await fetch(`${service.url}/metrics`, {
        headers: { authorization: `Bearer ${metricsToken}` },
      });
      expect(scraper.status).toBe(200);
      expect(await scraper.text()).toContain("outbox_backlog");
      // /health and /ready stay open for the orchestrator.
      expect((await fetch(`${service.url}/health`)).status).toBe(200);
    }
  });

  test("N4: a flood of scrapes shares one round of gauge reads per 5 s, and other routes stay fast", async () => {
    // Observed through the gauges' values rather than by counting the database's transactions
    // (pg_stat_database lags by up to 10 s and counts the relays' and dispatcher's timers too).
    const openMismatches = async () => {
      const started = performance.now();
      const text = await fetch(`${stack.api.url}/metrics`, {
        headers: { authorization: `Bearer ${metricsToken}` },
      }).then((r) => r.text());
      const line = text
        .split("\n")
        .find((l) => l.startsWith('payment_reviews_open{reason="mismatch"}'));
      return { started, answered: performance.now(), value: Number(line?.split(" ")[1] ?? 0) };
    };
    const warmUp = await openMismatches();
    // A new open review, written straight into the table the gauge reads.
    const order = await stack.newOrder();
    await stack.sql`
      insert into api.payment_reviews (notification_id, order_id, event, reason, amount, currency, message)
      values (${unique("n4")}, ${order.order_id}, 'payment.succeeded', 'mismatch', 1, 'USD', '{}')`;
    const flood = await Promise.all(Array.from({ length: 50 }, openMismatches));
    // Every scrape answered within 5 s of the warm-up's start was served from the warm-up's read:
    // none of them queried the database, or it would count the new review.
    const cached = flood.filter((s) => s.answered < warmUp.started + gaugeCacheMs);
    expect(cached.length).toBeGreaterThan(0);
    expect(new Set(cached.map((s) => s.value))).toEqual(new Set([warmUp.value]));
    // Past the 5 s, the next scrape reads again and counts it.
    await Bun.sleep(Math.max(0, warmUp.answered + gaugeCacheMs - performance.now()));
    const counted = await eventually(
      async () => ((await openMismatches()).value === warmUp.value + 1 ? true : undefined),
      8000,
      "the gauge to count the new review",
    );
    expect(counted).toBe(true);
    const read = performance.now();
    expect(
      (await stack.callApi("GET", `/api/orders/${order.order_id}`, stack.customer)).status,
    ).toBe(200);
    expect(performance.now() - read).toBeLessThan(1000);
  });
});

describe("W3, N10: a notification id that cannot be a header, and messages that cannot be published", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.stop());

  test("W3: an id with CR LF, a space or a control character is a 400, and nothing is stored", async () => {
    const order = await stack.newOrder();
    for (const id of ["evt_1\r\nX-Injected: 1", "evt 1", "evt\u0000", "évt", ""]) {
      const res = await stack.notify(succeeded(order, { id }));
      expect({ id, status: res.status }).toEqual({ id, status: 400 });
      expect(res.json.errors[0].path).toBe("/id");
    }
    const stored =
      await stack.sql`select 1 from payments.notifications where order_id = ${order.order_id}`;
    expect(stored).toHaveLength(0);
    expect(
      (
        await stack.notify(
          succeeded(order, { id: `${unique("evt")}~!#$%&'()*+,-./:;<=>?@[]^_\`{|}` }),
        )
      ).status,
    ).toBe(200);
    await stack.paid(order.order_id);
  });

  test("N10: an outbox row that can never be published is set aside after a few tries, listed and counted, and the relays go on", async () => {
    const admin = { authorization: `Bearer ${stack.admin}` };
    // A row as the payments service wrote one before W3 (an id with CR LF), and one of the api's
    // with a header NATS cannot carry: both failed with BAD_HEADER every second, forever.
    const badId = unique("evt_bad");
    const [payRow] = await stack.sql<{ id: number }[]>`
      insert into payments.outbox (subject, message_id, payload)
      values (${stack.topology.payments.orderPaid}, ${`${badId}\r\nX-Injected: 1`},
        ${stack.sql.json({ notification_id: badId, order_id: 1, amount: 1, currency: "USD", received_at: new Date().toISOString() })})
      returning id::int as id`;
    const [apiRow] = await stack.sql<{ id: number }[]>`
      insert into api.outbox (subject, message_id, payload, headers)
      values (${stack.topology.orders.event("paid")}, ${unique("order-paid")},
        ${stack.sql.json({ order_id: 1 })}, ${stack.sql.json({ "x-note": "a\r\nb" })})
      returning id::int as id`;

    // Payments written after them still go out and are applied.
    const order = await stack.newOrder();
    expect((await stack.notify(succeeded(order))).status).toBe(200);
    await stack.paid(order.order_id);
    expect(await stack.publishedOrdersPaid(order.order_id)).toHaveLength(1);

    for (const [service, row] of [
      [stack.payments, payRow],
      [stack.api, apiRow],
    ] as const) {
      const listed = await eventually(
        async () => {
          const res = await fetch(`${service.url}/api/outbox/dead`, { headers: admin });
          const body = (await res.json()) as { items: Array<Record<string, unknown>> };
          return body.items.find((item) => item.id === row.id);
        },
        20_000,
        `${service.name}'s dead outbox row`,
      );
      expect(listed).toMatchObject({ attempts: 3, last_error: "BAD_HEADER" });
      const metrics = await (await fetch(`${service.url}/metrics`)).text();
      expect(metrics).toMatch(/^outbox_dead_total\{code="BAD_HEADER"\} 1$/m);
      // Set aside, it is tried no more.
      const [after] =
        await stack.sql`select attempts from ${stack.sql(service.name)}.outbox where id = ${row.id}`;
      await Bun.sleep(2500);
      const [later] =
        await stack.sql`select attempts from ${stack.sql(service.name)}.outbox where id = ${row.id}`;
      expect(later.attempts).toBe(after.attempts);
      // Operators only.
      const customer = await fetch(`${service.url}/api/outbox/dead`, {
        headers: { authorization: `Bearer ${stack.customer}` },
      });
      expect(customer.status).toBe(403);
    }
  });
});

describe("N11: rate limits cannot be side-stepped", () => {
  let stack: Stack;
  const burst = 10;
  beforeAll(async () => {
    // One trusted proxy: the client address is the last X-Forwarded-For entry (N2).
    stack = await startStack({
      env: { RATE_LIMIT_RPS: "1", RATE_LIMIT_BURST: String(burst), TRUST_PROXY: "1" },
    });
  });
  afterAll(() => stack?.stop());

  /** A forged (unsigned) notification from `address`, as the reviewer sent them. */
  const forged = (address: string) =>
    fetch(`${stack.payments.url}/api/webhooks/payment`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-signature": "t=1,v1=00",
        "x-forwarded-for": address,
      },
      body: JSON.stringify({ event: "payment.succeeded", order_id: 1, amount: 1, currency: "USD" }),
    }).then((r) => r.status);

  test("N11: 40 forged webhooks rotating addresses inside one IPv6 /64 share one bucket", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++)
      statuses.push(await forged(`2001:db8:77:1::${(i + 1).toString(16)}`));
    // The burst gets its 401s; the rest are refused before their signature is even checked.
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(40 - burst - 2);
    // Another /64 has its own bucket.
    expect(await forged("2001:db8:77:2::1")).toBe(401);
  });

  test("N11: ::ffff:198.51.100.7 and 198.51.100.7 are one client", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < burst; i++) statuses.push(await forged("198.51.100.7"));
    expect(statuses.every((s) => s === 401)).toBe(true);
    expect(await forged("::ffff:198.51.100.7")).toBe(429);
    expect(await forged("::ffff:c633:6407")).toBe(429);
  });

  test("N11: requests with an invalid token count against their address on the api (429 after the burst)", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await fetch(`${stack.api.url}/api/orders`, {
        headers: {
          authorization: `Bearer ${unique("not.a.token")}`,
          "x-forwarded-for": "203.0.113.9",
        },
      });
      statuses.push(res.status);
    }
    expect(statuses.slice(0, burst).every((s) => s === 401)).toBe(true);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(30 - burst - 2);
    // No token at all counts too; and a valid token from that address is still served.
    const anonymous = await fetch(`${stack.api.url}/api/products`, {
      headers: { "x-forwarded-for": "203.0.113.9" },
    });
    expect(anonymous.status).toBe(429);
    expect(anonymous.headers.get("retry-after")).toMatch(/^\d+$/);
    const valid = await fetch(`${stack.api.url}/api/products`, {
      headers: { authorization: `Bearer ${stack.customer}`, "x-forwarded-for": "203.0.113.9" },
    });
    expect(valid.status).toBe(200);
  });

  test("N11: the payments operator routes are rate limited per address", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await fetch(`${stack.payments.url}/api/notifications`, {
        headers: {
          authorization: i % 2 ? `Bearer ${stack.admin}` : "Bearer forged",
          "x-forwarded-for": "2001:db8:99:1::5",
        },
      });
      statuses.push(res.status);
      if (i === 0) expect(res.headers.get("ratelimit-policy")).toContain(`q=${burst}`);
    }
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(30 - burst - 2);
  });
});

describe("N6: tokens verified with a public key; no service can mint one", () => {
  let stack: Stack;
  const pair = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const publicPem = pair.publicKey.export({ type: "spki", format: "pem" }).toString();
  const privatePem = pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const issuer = "https://id.shop.example";
  const audience = "shop";
  const authEnv = {
    // As an .env file holds it: one line, newlines written as \n.
    AUTH_PUBLIC_KEY: publicPem.replaceAll("\n", "\\n"),
    AUTH_ISSUER: issuer,
    AUTH_AUDIENCE: audience,
    // The deployment gives neither service the HS256 secret.
    AUTH_JWT_SECRET: "",
  };
  beforeAll(async () => {
    stack = await startStack({ env: authEnv });
  });
  afterAll(() => stack?.stop());

  /** `npm run token` with the private key, as the token issuer would run it. */
  const issued = async (args: string[], env: Record<string, string> = {}) => {
    const { out, err, code } = await runToEnd(
      [process.execPath, "--no-env-file", `${root}scripts/token.ts`, ...args],
      {
        cwd: "/",
        env: {
          PATH: process.env.PATH ?? "",
          AUTH_PRIVATE_KEY: privatePem.replaceAll("\n", "\\n"),
          AUTH_ISSUER: issuer,
          AUTH_AUDIENCE: audience,
          ...env,
        },
      },
    );
    return { token: out.trim(), err, code };
  };
  const asAdmin = (service: { url: string }, path: string, bearer: string) =>
    fetch(`${service.url}${path}`, { headers: { authorization: `Bearer ${bearer}` } }).then(
      (r) => r.status,
    );

  test("N6: npm run token signs with the private key; both services accept its tokens", async () => {
    const admin = await issued(["--sub", "ops", "--admin"]);
    expect(admin.code).toBe(0);
    expect(JSON.parse(atob(admin.token.split(".")[0]))).toMatchObject({ alg: "ES256" });
    expect(await asAdmin(stack.api, "/api/payment-reviews", admin.token)).toBe(200);
    expect(await asAdmin(stack.payments, "/api/notifications", admin.token)).toBe(200);
    const customer = await issued(["--sub", unique("alice")]);
    expect(await asAdmin(stack.api, "/api/orders", customer.token)).toBe(200);
    expect(await asAdmin(stack.api, "/api/payment-reviews", customer.token)).toBe(403);
  });

  test("N6: an admin token minted with an HS256 key, the public key as a secret, or the wrong iss/aud is refused", async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: "mallory", scope: "admin", iss: issuer, aud: audience, exp: now + 600 };
    const forgeries = [
      // What whoever took the payments container could do before: sign with its HS256 secret.
      await token(claims, jwtSecret),
      // Algorithm confusion: the public key (which anyone may read) as an HMAC secret.
      await token(claims, publicPem),
      (await issued(["--sub", "ops", "--admin"], { AUTH_ISSUER: "https://evil.example" })).token,
      (await issued(["--sub", "ops", "--admin"], { AUTH_AUDIENCE: "other-shop" })).token,
    ];
    for (const [i, forged] of forgeries.entries()) {
      expect({ i, status: await asAdmin(stack.api, "/api/payment-reviews", forged) }).toEqual({
        i,
        status: 401,
      });
      expect({ i, status: await asAdmin(stack.payments, "/api/notifications", forged) }).toEqual({
        i,
        status: 401,
      });
    }
  });

  test("N6: with a public key, a service without AUTH_ISSUER or AUTH_AUDIENCE does not start, nor with a private key", async () => {
    for (const service of ["api", "payments"])
      for (const [env, message] of [
        [{ ...authEnv, AUTH_ISSUER: "" }, "AUTH_ISSUER is required with AUTH_PUBLIC_KEY"],
        [{ ...authEnv, AUTH_AUDIENCE: "" }, "AUTH_AUDIENCE is required with AUTH_PUBLIC_KEY"],
        [
          { ...authEnv, AUTH_PUBLIC_KEY: privatePem.replaceAll("\n", "\\n") },
          "AUTH_PUBLIC_KEY holds a private key",
        ],
      ] as const) {
        const { out, err, code } = await runToEnd(
          [process.execPath, "--no-env-file", `${root}services/${service}/src/main.ts`],
          {
            env: {
              PATH: process.env.PATH ?? "",
              DATABASE_URL: testDatabaseUrl,
              PAYMENT_WEBHOOK_SECRETS: "whsec_test_secret_for_payments",
              PORT: "0",
              ...env,
            },
          },
        );
        expect({ service, code, said: (out + err).includes(message) }).toEqual({
          service,
          code: 1,
          said: true,
        });
      }
  });
});

describe("N12: npm start listens on 127.0.0.1 only", () => {
  test("N12: the services npm start runs answer on 127.0.0.1 and not on the machine's other addresses", async () => {
    const start = await startNpmStart();
    const { ports } = start;
    try {
      const output = await start.ready(60_000);
      expect(output).toContain(`http://127.0.0.1:${ports.api}`);
      const others = Object.values(networkInterfaces())
        .flat()
        .flatMap((a) => (a && !a.internal ? [a.address] : []));
      for (const port of Object.values(ports)) {
        expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
        for (const address of others) {
          const reached = await Bun.connect({
            hostname: address,
            port,
            socket: { data() {} },
          }).then(
            (socket) => {
              socket.end();
              return true;
            },
            () => false,
          );
          expect({ address, port, reached }).toEqual({ address, port, reached: false });
        }
      }
    } finally {
      await start.stop();
    }
  });
});

/**
 * The alternative a user would commonly pick for the same two reads: Express 5 + `pg` on Node.js,
 * doing the api's per-request duties the usual Express way: X-Request-Id, a bearer JWT verified
 * with `jose` (HS256, exp and sub required), query and path validation (400 problem+json), one
 * JSON log line per request on stdout. No rate limit, no metrics. Same SQL, pool of 10.
 *   PORT=3200 DATABASE_URL=postgres://... AUTH_JWT_SECRET=... node bench/express.js
 */
import { randomUUID } from "node:crypto";
import express from "express";
import { jwtVerify } from "jose";
import pg from "pg";

const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL ?? "postgres://root@127.0.0.1:5432/bench",
  max: 10,
});
const secret = new TextEncoder().encode(process.env.AUTH_JWT_SECRET ?? "");
const saneRequestId = /^[A-Za-z0-9._:-]{1,128}$/;

const problem = (res, status, title, detail) =>
  res
    .status(status)
    .type("application/problem+json")
    .send(JSON.stringify({ type: "about:blank", title, status, detail }));

const integerIn = (text, fallback, min, max) => {
  if (text === undefined) return fallback;
  if (typeof text !== "string" || !/^[0-9]{1,16}$/.test(text)) return undefined;
  const value = Number(text);
  return value >= min && value <= max ? value : undefined;
};

const app = express();

app.use((req, res, next) => {
  const started = performance.now();
  const sent = req.get("x-request-id");
  const id = sent && saneRequestId.test(sent) ? sent : randomUUID();
  res.set("x-request-id", id);
  res.on("finish", () => {
    const line = {
      time: new Date().toISOString(),
      level: "info",
      msg: "request",
      service: "express",
      request_id: id,
      method: req.method,
      route: req.route?.path ?? "unmatched",
      status: res.statusCode,
      duration_ms: Math.round((performance.now() - started) * 100) / 100,
    };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  });
  next();
});

app.get("/ready", (_req, res) => res.json({ status: "ready" }));

app.use("/api", async (req, res, next) => {
  const match = req.get("authorization")?.match(/^Bearer ([A-Za-z0-9._~+/=-]+)$/);
  if (!match) return problem(res, 401, "Unauthorized", "A bearer token is required");
  try {
    const { payload } = await jwtVerify(match[1], secret, {
      algorithms: ["HS256"],
      requiredClaims: ["exp", "sub"],
    });
    res.locals.customerId = payload.sub;
  } catch {
    return problem(res, 401, "Unauthorized", "The bearer token is invalid or expired");
  }
  next();
});

app.get("/api/products/:id", async (req, res) => {
  const id = integerIn(req.params.id, undefined, 1, 2147483647);
  if (id === undefined) return problem(res, 400, "Bad Request", "id must be a positive integer");
  const { rows } = await pool.query(
    'select "id", "name", "price", "category" from "api"."products" where "api"."products"."id" = $1',
    [id],
  );
  if (rows.length === 0) return problem(res, 404, "Not Found", `Product ${id} does not exist`);
  res.json(rows[0]);
});

app.get("/api/products", async (req, res) => {
  const { category } = req.query;
  const page = integerIn(req.query.page, 1, 1, 1_000_000);
  const perPage = integerIn(req.query.per_page, 20, 1, 100);
  const categoryOk =
    category === undefined ||
    (typeof category === "string" && category.length <= 100 && !category.includes("\0"));
  if (page === undefined || perPage === undefined || !categoryOk)
    return problem(res, 400, "Bad Request", "The request query string is invalid");
  const where = category === undefined ? "" : ' where "api"."products"."category" = $1';
  const params = category === undefined ? [] : [category];
  // The api's SQL: one query with a window count; a page past the end counts separately.
  const rows = await pool.query(
    `select "id", "name", "price", "category", count(*) over ()::int as total from "api"."products"${where} order by "api"."products"."id" asc limit ${perPage} offset ${(page - 1) * perPage}`,
    params,
  );
  const total =
    rows.rows[0]?.total ??
    Number(
      (await pool.query(`select count(*) from "api"."products"${where}`, params)).rows[0].count,
    );
  res.json({
    items: rows.rows.map(({ total: _, ...product }) => product),
    page,
    pages: Math.ceil(total / perPage),
    per_page: perPage,
    total,
  });
});

app.use((_req, res) => problem(res, 404, "Not Found", "No such route"));

const server = app.listen(Number(process.env.PORT ?? 3200), "127.0.0.1");

const stop = () => {
  server.close(() => pool.end().then(() => process.exit(0)));
  setTimeout(() => process.exit(0), 2000).unref();
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

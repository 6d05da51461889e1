/**
 * The floor for the read benchmarks: the api's two product reads as plain `Bun.serve` routes over
 * the `postgres` driver, with the SQL drizzle generates for them and the same pool size (10), but
 * no framework, no ORM, no auth, no validation beyond parsing, no logging, no metrics.
 *   PORT=3100 DATABASE_URL=postgres://... npx bun bench/floor.ts
 */
import postgres from "postgres";

const sql = postgres(process.env.DATABASE_URL ?? "postgres://root@127.0.0.1:5432/test", {
  max: 10,
  onnotice: () => {},
});

const notFound = () => Response.json({ status: 404 }, { status: 404 });
const positive = (text: string | null, fallback: number) => {
  const value = text === null ? fallback : Number(text);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
};

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: Number(process.env.PORT ?? 3100),
  routes: {
    "/ready": () => Response.json({ status: "ready" }),
    "/api/products/:id": async (request) => {
      const id = positive(request.params.id, 0);
      if (id === undefined || id > 2147483647) return Response.json({}, { status: 400 });
      const [product] =
        await sql`select "id", "name", "price", "category" from "api"."products" where "api"."products"."id" = ${id}`;
      return product ? Response.json(product) : notFound();
    },
    "/api/products": async (request) => {
      const query = new URL(request.url).searchParams;
      const category = query.get("category");
      const page = positive(query.get("page"), 1);
      const perPage = positive(query.get("per_page"), 20);
      if (category === null || page === undefined || perPage === undefined || perPage > 100)
        return Response.json({}, { status: 400 });
      // The api's SQL: one query with a window count; a page past the end counts separately.
      const rows =
        await sql`select "id", "name", "price", "category", count(*) over ()::int as total from "api"."products" where "api"."products"."category" = ${category} order by "api"."products"."id" asc limit ${perPage} offset ${(page - 1) * perPage}`;
      const total =
        rows[0]?.total ??
        (
          await sql`select count(*)::int as total from "api"."products" where "api"."products"."category" = ${category}`
        )[0].total;
      const items = rows.map(({ total: _, ...product }) => product);
      return Response.json({
        items,
        page,
        pages: Math.ceil(total / perPage),
        per_page: perPage,
        total,
      });
    },
  },
  fetch: notFound,
});

const stop = async () => {
  await server.stop();
  await sql.end({ timeout: 2 });
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());

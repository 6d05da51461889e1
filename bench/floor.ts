/**
 * The floor for the read benchmarks: the api's two product reads as plain `Bun.serve` routes, with
 * the very SQL drizzle generates for them (a list page is one statement: its total, its rows and
 * so `next_after`) and the same pool size (10), but no framework, no ORM, no auth, no validation
 * beyond parsing, no logging, no metrics. `FLOOR_DRIVER=bun` runs it on Bun's built-in SQL instead
 * of the `postgres` driver the api uses: what a user could pick instead.
 *   PORT=3100 DATABASE_URL=postgres://... [FLOOR_DRIVER=bun] npx bun bench/floor.ts
 */
import { SQL } from "bun";
import postgres from "postgres";

const url = process.env.DATABASE_URL ?? "postgres://root@127.0.0.1:5432/bench";
type Row = Record<string, unknown>;
type Query = (strings: TemplateStringsArray, ...values: unknown[]) => Promise<Row[]>;
const bunSql = process.env.FLOOR_DRIVER === "bun";
const client = bunSql ? new SQL(url, { max: 10 }) : postgres(url, { max: 10, onnotice: () => {} });
const sql = client as unknown as Query;

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
        await sql`select "id", "name", "price", "category", "stock" from "api"."products" where "api"."products"."id" = ${id}`;
      return product ? Response.json(product) : notFound();
    },
    "/api/products": async (request) => {
      const query = new URL(request.url).searchParams;
      const category = query.get("category");
      const page = positive(query.get("page"), 1);
      const perPage = positive(query.get("per_page"), 20);
      if (category === null || page === undefined || perPage === undefined || perPage > 100)
        return Response.json({}, { status: 400 });
      const offset = (page - 1) * perPage;
      // The api's statement (services/api/src/lib/list-page.ts): the total from the counter rows
      // and the page's ids from whichever end of the list is nearer, in one snapshot.
      const rows =
        await sql`with "total" as (select coalesce(sum("n"), 0)::bigint as "n" from "api"."list_counts" where ("api"."list_counts"."list" = ${"products/category"} and "api"."list_counts"."key" = ${category})) select "n", "api"."products"."id", "api"."products"."name", "api"."products"."price", "api"."products"."category", "api"."products"."stock" from "total" left join "api"."products" on "api"."products"."id" = any(array(
    (select "api"."products"."id" from "api"."products" where "api"."products"."category" = ${category} and 2 * ${offset}::bigint < (select n from total)
      order by "api"."products"."id" asc limit ${perPage}::bigint offset ${offset}::bigint)
    union all
    (select "api"."products"."id" from "api"."products" where "api"."products"."category" = ${category} and 2 * ${offset}::bigint >= (select n from total)
      order by "api"."products"."id" desc
      limit greatest(least(${perPage}::bigint, (select n from total) - ${offset}::bigint), 0)
      offset greatest((select n from total) - ${offset}::bigint - ${perPage}::bigint, 0)))) order by "api"."products"."id" asc`;
      const total = Number(rows[0]?.n ?? 0);
      const items = rows.flatMap(({ n: _, ...product }) => (product.id === null ? [] : [product]));
      const last = items.at(-1);
      return Response.json({
        items,
        page,
        pages: Math.ceil(total / perPage),
        per_page: perPage,
        total,
        next_after: last && offset + items.length < total ? last.id : null,
      });
    },
  },
  fetch: notFound,
});

const stop = async () => {
  await server.stop();
  await client.end({ timeout: 2 });
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());

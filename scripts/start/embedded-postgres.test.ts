import { expect, test } from "bun:test";
import { connectDatabase, migrateSchema } from "@commerce/shared/platform/database";
import apiMigrations from "../../services/api/drizzle/migrations.json";
import paymentsMigrations from "../../services/payments/drizzle/migrations.json";
import { startEmbeddedPostgres } from "./embedded-postgres";

test("npm start's embedded database: a pool of one migrates, then serves concurrent queries and transactions", async () => {
  const embedded = await startEmbeddedPostgres();
  const sql = connectDatabase(embedded.url);
  try {
    expect(sql.options.max).toBe(1);
    // Its advisory lock and its migrations share the one connection (a second one would wait forever).
    await migrateSchema(sql, { schema: "api", migrations: apiMigrations as never });
    await migrateSchema(sql, { schema: "payments", migrations: paymentsMigrations as never });
    await sql`create table counted (n int)`;
    const answers = await Promise.allSettled(
      Array.from({ length: 200 }, (_, i) =>
        i % 4 === 3
          ? sql.begin(async (tx) => {
              await tx`insert into counted values (${i})`;
              return (await tx`select ${i}::int as n`)[0].n;
            })
          : sql`select ${i}::int as n`.then(([row]) => row.n),
      ),
    );
    expect(answers.map((a) => (a.status === "fulfilled" ? a.value : String(a.reason)))).toEqual(
      Array.from({ length: 200 }, (_, i) => i),
    );
    expect((await sql`select count(*)::int as rows from counted`)[0].rows).toBe(50);
  } finally {
    await sql.end();
    await embedded.stop();
  }
}, 60_000);

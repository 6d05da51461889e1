import { describe, expect, test } from "bun:test";
import { privateDatabase } from "@commerce/testing/private-database";
import { connectDatabase } from "./database";
import { applyMigrations } from "./migrator";

describe("migrations on a fresh database", () => {
  test("O10: services migrating at once on a fresh database all succeed (the shared drizzle schema and its tables created once, whoever is first)", async () => {
    const database = await privateDatabase();
    // Eight services' worth of first starts at the same moment, each with a pool of its own, as
    // separate processes would be.
    const pools = Array.from({ length: 8 }, () => connectDatabase(database.url, { max: 1 }));
    try {
      await Promise.all(pools.map((sql) => sql`select 1`));
      // Ten first starts: the shared schema is gone again before each.
      for (let round = 0; round < 10; round++) {
        await database.sql`drop schema if exists drizzle cascade`;
        const results = await Promise.allSettled(
          pools.map((sql, i) =>
            applyMigrations(sql, [], {
              migrationsSchema: "drizzle",
              migrationsTable: `s${i}_migrations`,
            }),
          ),
        );
        const failures = results.flatMap((result) =>
          result.status === "rejected" ? [String((result.reason as Error).message)] : [],
        );
        expect(failures).toEqual([]);
      }
      const tables = await database.sql<{ name: string }[]>`
        select table_name as name from information_schema.tables
        where table_schema = 'drizzle' order by table_name`;
      expect(tables.map((row) => row.name)).toEqual(pools.map((_, i) => `s${i}_migrations`));
    } finally {
      await Promise.all(pools.map((sql) => sql.end({ timeout: 1 })));
      await database.drop();
    }
  });
});

import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { readMigrationFiles } from "drizzle-orm/migrator";

const root = new URL("../../..", import.meta.url).pathname;

describe("embedded migrations", () => {
  for (const service of ["api", "payments"]) {
    const folder = `${root}services/${service}/drizzle`;
    test.skipIf(!existsSync(`${folder}/meta/_journal.json`))(
      `${service}: drizzle/migrations.json matches the drizzle-kit migrations (run npm run db:generate)`,
      () => {
        const embedded = JSON.parse(readFileSync(`${folder}/migrations.json`, "utf8"));
        expect(embedded).toEqual(readMigrationFiles({ migrationsFolder: folder }));
      },
    );
  }
});

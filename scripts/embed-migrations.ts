/**
 * Writes each service's drizzle-kit migrations into `drizzle/migrations.json`, the form the
 * services import, so a compiled binary carries its migrations with no files beside it.
 * Run after `drizzle-kit generate` (the services' `db:generate` scripts do).
 */
import { writeFileSync } from "node:fs";
import { readMigrationFiles } from "drizzle-orm/migrator";

const root = new URL("..", import.meta.url).pathname;
const services = process.argv.slice(2).length ? process.argv.slice(2) : ["api", "payments"];

for (const service of services) {
  const folder = `${root}services/${service}/drizzle`;
  const migrations = readMigrationFiles({ migrationsFolder: folder });
  writeFileSync(`${folder}/migrations.json`, `${JSON.stringify(migrations, null, 2)}\n`);
  console.log(`${service}: ${migrations.length} migration(s) embedded`);
}

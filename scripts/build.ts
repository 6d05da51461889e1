/**
 * `npm run build`: one self-contained binary per service in dist/ (migrations embedded).
 * Whitespace and syntax minification only: full identifier minification is what Elysia's
 * deployment notes warn can break it. The binaries bundle postgres.js with the fix that
 * bunfig.toml preloads for source runs (shared/src/postgres-patch.ts).
 */
import { statSync } from "node:fs";
import type { Build } from "bun";
import { postgresPatch } from "../shared/src/postgres-patch";

const services = process.argv.slice(2).length ? process.argv.slice(2) : ["api", "payments"];
const target = (process.env.BUN_BUILD_TARGET ?? "bun-linux-x64") as Build.CompileTarget;

for (const service of services) {
  const outfile = `dist/${service}`;
  const build = await Bun.build({
    entrypoints: [`services/${service}/src/main.ts`],
    compile: { target, outfile },
    minify: { whitespace: true, syntax: true },
    plugins: [postgresPatch],
  });
  for (const message of build.logs) console.error(message);
  if (!build.success) process.exit(1);
  console.log(`${outfile}: ${(statSync(outfile).size / 1024 / 1024).toFixed(1)} MiB`);
}

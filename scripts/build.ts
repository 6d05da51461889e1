/**
 * `npm run build`: one self-contained binary per service in dist/ (migrations embedded).
 * Whitespace and syntax minification only: full identifier minification is what Elysia's
 * deployment notes warn can break it.
 */
import { statSync } from "node:fs";

const services = process.argv.slice(2).length ? process.argv.slice(2) : ["api", "payments"];
const target = process.env.BUN_BUILD_TARGET ?? "bun-linux-x64";

for (const service of services) {
  const outfile = `dist/${service}`;
  const build = Bun.spawnSync(
    [
      process.execPath,
      "build",
      "--compile",
      "--minify-whitespace",
      "--minify-syntax",
      `--target=${target}`,
      `services/${service}/src/main.ts`,
      "--outfile",
      outfile,
    ],
    { stdout: "inherit", stderr: "inherit" },
  );
  if (build.exitCode !== 0) process.exit(build.exitCode ?? 1);
  console.log(`${outfile}: ${(statSync(outfile).size / 1024 / 1024).toFixed(1)} MiB`);
}

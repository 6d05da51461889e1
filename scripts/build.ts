/**
 * `npm run build`: one self-contained binary per service in dist/ (migrations embedded; the api
 * carries the operator console, bundled here first).
 * Whitespace and syntax minification only: full identifier minification is what Elysia's
 * deployment notes warn can break it. The binaries bundle node_modules as installed, so they
 * carry patches/ only if npm applied it: the build refuses an install that lacks a hunk.
 */

import { statSync } from "node:fs";
import { bunServiceFlags } from "@commerce/shared/platform/http/request-limits";
import type { Build, BunPlugin } from "bun";
import { buildConsole } from "../services/api/console/build";
import { missingHunks } from "./dependency-patches";

const services = process.argv.slice(2).length ? process.argv.slice(2) : ["api", "payments"];
const target = (process.env.BUN_BUILD_TARGET ?? "bun-linux-x64") as Build.CompileTarget;

const { missing } = missingHunks();
if (missing.length) {
  console.error(`node_modules lacks patches/ (npm ci applies them):\n  ${missing.join("\n  ")}`);
  process.exit(1);
}

/** U1: the console's bundle takes the place of the module that, run from source, has none. */
async function embeddedConsole(): Promise<BunPlugin> {
  const assets = await buildConsole();
  return {
    name: "embedded-console",
    setup(build) {
      build.onLoad({ filter: /modules\/console\/prebuilt\.ts$/ }, () => ({
        contents: `export const prebuiltConsole = ${JSON.stringify(assets)};`,
        loader: "ts",
      }));
    },
  };
}

for (const service of services) {
  const outfile = `dist/${service}`;
  const build = await Bun.build({
    entrypoints: [`services/${service}/src/main.ts`],
    // E4: Bun's header limit raised so the service answers 431 itself (request-limits.ts).
    // O10, N20: a binary is configured by its environment only, never by a `.env` or
    // `bunfig.toml` that happens to sit in its working directory.
    compile: {
      target,
      outfile,
      execArgv: bunServiceFlags,
      autoloadDotenv: false,
      autoloadBunfig: false,
    },
    minify: { whitespace: true, syntax: true },
    // E5: production mode whatever the environment (shared/src/platform/production-mode.ts).
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    plugins: service === "api" ? [await embeddedConsole()] : [],
  });
  for (const message of build.logs) console.error(message);
  if (!build.success) process.exit(1);
  console.log(`${outfile}: ${(statSync(outfile).size / 1024 / 1024).toFixed(1)} MiB`);
}

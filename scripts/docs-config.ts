/**
 * npm run docs:config [-- --out DIR]: writes docs/configuration.md and .env.example from the
 * services' TypeBox environment schemas, the one place that states each variable's type, range,
 * default and description (issue 27). CI runs it and fails when the tree changes, so a schema
 * change that is not regenerated cannot be merged; `docs-config.test.ts` does the same in
 * `npm test`. `--out DIR` writes DIR/docs/configuration.md and DIR/.env.example instead.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { authVariables } from "@commerce/shared/platform/auth/auth-config";
import { commonVariables } from "@commerce/shared/platform/config";
import type { TSchema } from "@sinclair/typebox";
import { apiEnv } from "../services/api/src/config";
import { paymentsEnv } from "../services/payments/src/config";
import { composeOnly } from "./docs-config/compose-variables";
import { renderEnvExample, renderMarkdown, type Variable } from "./docs-config/render";

const root = join(import.meta.dir, "..");
const providersDir = join(root, "services/payments/src/modules/providers");

/** Each provider folder's own variables (a plug-in exports `{ name, variables }`), by folder. */
async function providerFolders(): Promise<Map<string, string>> {
  const declaredIn = new Map<string, string>();
  for (const entry of readdirSync(providersDir, { withFileTypes: true })) {
    if (!entry.isDirectory() || !existsSync(join(providersDir, entry.name, "index.ts"))) continue;
    const module: Record<string, unknown> = await import(
      join(providersDir, entry.name, "index.ts")
    );
    for (const value of Object.values(module)) {
      const variables = (value as { variables?: Record<string, unknown> } | null)?.variables;
      if (typeof value !== "object" || !variables) continue;
      for (const name of Object.keys(variables))
        declaredIn.set(name, `services/payments/src/modules/providers/${entry.name}/`);
    }
  }
  return declaredIn;
}

/** Where each variable's schema is written, so a reader knows which file to change. */
async function declarations(): Promise<Map<string, string>> {
  const declaredIn = await providerFolders();
  const shared = commonVariables({ port: 0, ratePerSecond: 0, burst: 0 });
  for (const name of Object.keys(shared))
    if (!(name in authVariables)) declaredIn.set(name, "shared/src/platform/config.ts");
  for (const name of Object.keys(authVariables))
    declaredIn.set(name, "shared/src/platform/auth/auth-config.ts");
  return declaredIn;
}

/** Every variable either service reads, once, with the services that read it. */
export async function collectVariables(): Promise<Variable[]> {
  const declaredIn = await declarations();
  const services = [
    { service: "api", schema: apiEnv, file: "services/api/src/config.ts" },
    { service: "payments", schema: paymentsEnv, file: "services/payments/src/config.ts" },
  ] as const;
  const byName = new Map<string, Variable>();
  for (const { service, schema, file } of services) {
    for (const [name, variable] of Object.entries<TSchema>(schema.properties)) {
      const known = byName.get(name);
      if (known) known.schemas[service] = variable;
      else
        byName.set(name, {
          name,
          schemas: { [service]: variable },
          declaredIn: declaredIn.get(name) ?? file,
        });
    }
  }
  return [...byName.values()];
}

/** The variables docker-compose.yml requires (`${NAME:?...}`): they stay uncommented in .env.example. */
function composeRequired(): Set<string> {
  const names = new Set<string>();
  for (const file of ["docker-compose.yml", "docker-compose.cluster.yml"]) {
    const path = join(root, file);
    if (!existsSync(path)) continue;
    for (const match of readFileSync(path, "utf8").matchAll(/\$\{([A-Z0-9_]+):\?/g))
      names.add(match[1]);
  }
  return names;
}

export async function generate(): Promise<{ markdown: string; envExample: string }> {
  const variables = await collectVariables();
  const required = composeRequired();
  const known = new Set([...variables.map((v) => v.name), ...composeOnly.map((v) => v.name)]);
  const unknown = [...required].filter((name) => !known.has(name));
  // A variable compose requires but nothing describes would be a silent hole in .env.example.
  if (unknown.length)
    throw new Error(`docker-compose requires ${unknown.join(", ")}: describe them in composeOnly`);
  return {
    markdown: renderMarkdown(variables, composeOnly),
    envExample: renderEnvExample(variables, composeOnly, required),
  };
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { out: { type: "string", default: root } } });
  const out = values.out ?? root;
  const { markdown, envExample } = await generate();
  const targets = [
    [join(out, "docs/configuration.md"), markdown],
    [join(out, ".env.example"), envExample],
  ] as const;
  for (const [path, text] of targets) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  }
}

/**
 * X3, X6: writes deploy/kubernetes/schemas/cloudnative-pg.json, the OpenAPI schemas of the
 * CloudNativePG kinds the manifests use, from the operator's own CRDs (no npm package ships them):
 *   git show v1.25.4:config/crd/bases/postgresql.cnpg.io_clusters.yaml > clusters.yaml   (and
 *   ..._scheduledbackups.yaml) in github.com/cloudnative-pg/cloudnative-pg, then
 *   bun scripts/cnpg-schemas.ts v1.25.4 clusters.yaml scheduledbackups.yaml
 * Descriptions are dropped (the file is read by a validator, not by people); the schemas are
 * otherwise the CRDs' own (Apache-2.0, The CloudNativePG Contributors).
 */
import { readFileSync, writeFileSync } from "node:fs";

const [version, ...files] = process.argv.slice(2);
if (!version || files.length === 0)
  throw new Error("usage: bun scripts/cnpg-schemas.ts <operator version> <crd.yaml>...");

// biome-ignore lint/suspicious/noExplicitAny: a CRD's schema, walked as plain JSON.
const withoutDescriptions = (node: any): any => {
  if (Array.isArray(node)) return node.map(withoutDescriptions);
  if (node === null || typeof node !== "object") return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([key, value]) => !(key === "description" && typeof value === "string"))
      .map(([key, value]) => [key, withoutDescriptions(value)]),
  );
};

const schemas: Record<string, unknown> = {};
for (const file of files) {
  // biome-ignore lint/suspicious/noExplicitAny: a CustomResourceDefinition as parsed.
  const crd = Bun.YAML.parse(readFileSync(file, "utf8")) as any;
  for (const served of crd.spec.versions)
    schemas[`${crd.spec.group}/${served.name} ${crd.spec.names.kind}`] = withoutDescriptions(
      served.schema.openAPIV3Schema,
    );
}
const out = new URL("../deploy/kubernetes/schemas/cloudnative-pg.json", import.meta.url).pathname;
writeFileSync(
  out,
  `${JSON.stringify({ source: `cloudnative-pg ${version} config/crd/bases (Apache-2.0)`, schemas })}\n`,
);
console.log(`${Object.keys(schemas).join(", ")} → ${out}`);

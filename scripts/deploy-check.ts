/**
 * X3: renders every overlay of deploy/kubernetes/ and validates each object offline:
 *   npm run deploy:check
 * Rendering is kustomize's own, as built into kubectl (`kubectl kustomize`, kustomize v5; the
 * node-svc machines carry kubectl 1.32); no npm package ships kustomize, and a hand-written
 * renderer would be a second kustomize to trust. Validation is the Kubernetes OpenAPI schemas of
 * `kubernetesSchemaVersion` (kubernetes-models, ajv compiled), and the prometheus-operator CRDs'
 * schemas (@kubernetes-models/prometheus-operator) for ServiceMonitor and PodMonitor.
 * CloudNativePG's kinds (`Cluster`, `ScheduledBackup`) have no schema package: they are checked
 * against the operator's own CRD schemas, kept in deploy/kubernetes/schemas/cloudnative-pg.json
 * (scripts/cnpg-schemas.ts writes it), with unknown fields refused as the API server's strict
 * field validation refuses them. Any other kind without a schema is an error.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv, { type ValidateFunction } from "ajv";

export const root = new URL("..", import.meta.url).pathname;
export const overlaysDir = join(root, "deploy/kubernetes/overlays");
/** The API version kubernetes-models 5 was generated from (its changelog: "Kubernetes v1.36.0"). */
export const kubernetesSchemaVersion = "1.36";

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  // biome-ignore lint/suspicious/noExplicitAny: rendered YAML, checked by the schemas below.
  spec?: any;
  [key: string]: unknown;
};

export type Finding = { object: string; message: string };

/** Kinds whose CRD schema no npm package ships: not validated, and said so. */
const withoutSchema = new Set<string>();

/**
 * A CRD's schema made strict: an object that lists its properties and does not say it keeps
 * unknown fields refuses any other (the API server drops or, with strict field validation,
 * refuses them: either way a misspelt field would never reach the operator).
 */
// biome-ignore lint/suspicious/noExplicitAny: a CRD's schema, walked as plain JSON.
function strict(node: any): any {
  if (Array.isArray(node)) return node.map(strict);
  if (node === null || typeof node !== "object") return node;
  const copy = Object.fromEntries(Object.entries(node).map(([key, value]) => [key, strict(value)]));
  if (
    copy.properties &&
    copy.additionalProperties === undefined &&
    !copy["x-kubernetes-preserve-unknown-fields"]
  )
    copy.additionalProperties = false;
  return copy;
}

let crdValidators: Map<string, ValidateFunction> | undefined;

/** The CloudNativePG kinds' validators, by "apiVersion kind". */
function crdValidator(key: string): ValidateFunction | undefined {
  if (!crdValidators) {
    const file = join(root, "deploy/kubernetes/schemas/cloudnative-pg.json");
    const { schemas } = JSON.parse(readFileSync(file, "utf8")) as {
      schemas: Record<string, object>;
    };
    // The CRDs' own keywords (x-kubernetes-*) and formats (int32, ...) are not ajv's.
    const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });
    crdValidators = new Map(
      Object.entries(schemas).map(([kind, schema]) => [kind, ajv.compile(strict(schema))]),
    );
  }
  return crdValidators.get(key);
}

/** Where the model (with its compiled schema) of an apiVersion lives, or undefined. */
function modelModule(apiVersion: string, kind: string): string | undefined {
  if (!/^[A-Za-z]+$/.test(kind)) return undefined;
  if (apiVersion === "v1") return `kubernetes-models/v1/${kind}`;
  const [group, version] = apiVersion.split("/");
  if (!version || !/^[a-z0-9.]+$/.test(group) || !/^v[0-9a-z]+$/.test(version)) return undefined;
  if (group === "monitoring.coreos.com")
    return `@kubernetes-models/prometheus-operator/monitoring.coreos.com/${version}/${kind}`;
  return `kubernetes-models/${group}/${version}/${kind}`;
}

export const describe = (o: Partial<K8sObject>) =>
  `${o.apiVersion ?? "?"} ${o.kind ?? "?"} ${o.metadata?.name ?? "?"}`;

/** The overlays: each folder under deploy/kubernetes/overlays. */
export function overlays(): string[] {
  return readdirSync(overlaysDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => join(overlaysDir, entry.name));
}

/** `kubectl kustomize <dir>`, parsed into its objects. */
export function render(dir: string): K8sObject[] {
  let run: { exitCode: number; stdout: Buffer; stderr: Buffer };
  try {
    run = Bun.spawnSync(["kubectl", "kustomize", dir], { stdout: "pipe", stderr: "pipe" });
  } catch {
    throw new Error(
      "kubectl is not on PATH: it carries kustomize (`kubectl kustomize`); install kubectl 1.27+",
    );
  }
  if (run.exitCode !== 0)
    throw new Error(`kubectl kustomize ${dir} failed: ${run.stderr.toString().trim()}`);
  const parsed = Bun.YAML.parse(run.stdout.toString()) as K8sObject | K8sObject[] | null;
  if (parsed === null) return [];
  return (Array.isArray(parsed) ? parsed : [parsed]).filter((doc) => doc !== null);
}

/**
 * Validates each object against its schema. Returns the errors and the objects skipped (kinds
 * without a published schema package). Unknown kinds are errors.
 */
export async function validate(
  objects: K8sObject[],
): Promise<{ errors: Finding[]; skipped: string[] }> {
  const errors: Finding[] = [];
  const skipped: string[] = [];
  for (const object of objects) {
    const name = describe(object);
    if (typeof object?.apiVersion !== "string" || typeof object?.kind !== "string") {
      errors.push({ object: name, message: "no apiVersion or kind" });
      continue;
    }
    if (withoutSchema.has(`${object.apiVersion} ${object.kind}`)) {
      skipped.push(name);
      continue;
    }
    const crd = crdValidator(`${object.apiVersion} ${object.kind}`);
    if (crd) {
      if (!crd(object))
        errors.push({
          object: name,
          message: (crd.errors ?? [])
            .map(
              (e) =>
                `${e.instancePath || "/"} ${e.message}${e.params && "additionalProperty" in e.params ? ` (${e.params.additionalProperty})` : ""}`,
            )
            .join("; "),
        });
      continue;
    }
    const path = modelModule(object.apiVersion, object.kind);
    // biome-ignore lint/suspicious/noExplicitAny: a model class, looked up by name.
    let Model: any;
    try {
      Model = path ? (await import(path))[object.kind] : undefined;
    } catch {
      Model = undefined;
    }
    if (typeof Model !== "function") {
      errors.push({ object: name, message: "no schema for this apiVersion and kind" });
      continue;
    }
    try {
      new Model(object).validate();
    } catch (error) {
      errors.push({ object: name, message: (error as Error).message });
    }
  }
  return { errors, skipped };
}

if (import.meta.main) {
  let failed = false;
  for (const dir of overlays()) {
    const objects = render(dir);
    const { errors, skipped } = await validate(objects);
    const where = dir.slice(root.length);
    console.log(
      `${where}: ${objects.length} objects, ${errors.length} errors (Kubernetes ${kubernetesSchemaVersion} schemas)`,
    );
    for (const name of skipped) console.log(`  skipped (no schema package): ${name}`);
    for (const error of errors) console.log(`  ${error.object}: ${error.message}`);
    if (errors.length > 0 || objects.length === 0) failed = true;
  }
  process.exit(failed ? 1 : 0);
}

/**
 * The front door and the docs link by relative paths and #anchors (issue 27), and name the
 * repository's files in backticks (issue 37): a moved file or a renamed heading must not leave a
 * newcomer at a dead link or a file that is not there. Targets a branch of this round is still
 * creating are listed in doc-links-pending.txt.
 */
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join, normalize } from "node:path";

const root = join(import.meta.dir, "..");

const documents = [
  "README.md",
  "shared/README.md",
  ...new Bun.Glob("docs/**/*.md").scanSync({ cwd: root }),
].sort();

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as dashes. */
export const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, "")
    .replaceAll(" ", "-");

const withoutCode = (text: string) => text.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");

function anchors(path: string): Set<string> {
  const text = withoutCode(readFileSync(join(root, path), "utf8"));
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1])));
}

function pending(): Map<string, string> {
  const text = readFileSync(join(import.meta.dir, "doc-links-pending.txt"), "utf8");
  const entries = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line.trim() === "" || line.startsWith("#")) continue;
    const match = line.match(/^(\S+): (\S.*)$/);
    if (!match) throw new Error(`doc-links-pending.txt: "${line}" is not "path: why"`);
    entries.set(match[1], match[2]);
  }
  return entries;
}

test("docs: GitHub's anchor of a heading", () => {
  expect(anchorOf('Runbook: "why did the warehouse not hear of order 42?"')).toBe(
    "runbook-why-did-the-warehouse-not-hear-of-order-42",
  );
  expect(anchorOf("Outgoing webhooks (api)")).toBe("outgoing-webhooks-api");
});

test("docs: every relative link of README.md and docs/ reaches a file, and its #anchor a heading", () => {
  const waiting = pending();
  const broken: string[] = [];
  for (const document of documents) {
    const text = withoutCode(readFileSync(join(root, document), "utf8"));
    for (const [, link] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(link) || link.startsWith("<")) continue;
      const [path, anchor] = link.split("#");
      const target = path ? normalize(join(dirname(document), path)) : document;
      if (!existsSync(join(root, target))) {
        if (!waiting.has(target)) broken.push(`${document}: ${link}`);
      } else if (anchor && target.endsWith(".md") && !anchors(target).has(anchor))
        broken.push(`${document}: ${link} (no such heading)`);
    }
  }
  expect(broken).toEqual([]);
  // doc-links-pending.txt lists only targets still missing: remove an entry once it exists.
  const arrived = [...waiting.keys()].filter((path) => existsSync(join(root, path)));
  expect(arrived).toEqual([]);
});

/** The repository's files (tracked, or new and not ignored) and every folder that holds one. */
function repositoryEntries() {
  const listed = Bun.spawnSync(["git", "ls-files", "--cached", "--others", "--exclude-standard"], {
    cwd: root,
  });
  // Tracked files deleted from the work tree are gone for a reader too.
  const files = listed.stdout
    .toString()
    .split("\n")
    .filter((file) => file && existsSync(join(root, file)));
  const folders = new Set<string>();
  for (const file of files)
    for (let folder = dirname(file); folder !== "."; folder = dirname(folder)) folders.add(folder);
  return { files: new Set(files), folders, names: new Set(files.map((file) => basename(file))) };
}

/** Paths the docs name that the repository holds by design not: build output, local state. */
const notInTheRepository = [/^dist\//, /^\.data\b/, /^node_modules\//, /^\.env$/];
/** Files of a dependency or of the reader's own, named in the docs as such. */
const namedAsOthers = new Set([
  "src/connection.js", // postgres.js's, which patches/ changes (decisions.md)
  "cjs/src/connection.js",
  "docker-compose.override.yml", // the deployer's own (deployment.md)
]);
const fileName = /\.(ts|md|txt|lua|sh|ya?ml)$/;
const pathName = /\.(ts|md|json|ya?ml|txt|lua|sh|js|sql|png|lock)$/;

/**
 * A backticked text that claims to be a path of this repository: `services/api/src/app.ts`,
 * `test/harness/`, `modules/orders/state/` (written from a service's src), `group-commit.ts`.
 * Routes (`/api/...`), media types, package names, globs and commands are not.
 */
function claimedPath(text: string, topLevel: Set<string>): string | undefined {
  if (/[\s<>*{}…$|=@:,()[\]]/.test(text) || /^[/-]/.test(text)) return undefined;
  const path = text.replace(/^\.\//, "");
  if (!path.includes("/")) return fileName.test(path) ? path : undefined;
  const first = path.replace(/^(\.\.\/)+/, "").split("/")[0];
  return topLevel.has(first) || pathName.test(path) ? path : undefined;
}

test("docs: every repository path README.md and docs/ name in backticks exists", () => {
  const { files, folders, names } = repositoryEntries();
  const topLevel = new Set([...files, ...folders].map((entry) => entry.split("/")[0]));
  const holds = (path: string) => files.has(path) || folders.has(path.replace(/\/$/, ""));
  const missing: string[] = [];
  // A history records files as they were then: only the current documents are held to the tree.
  for (const document of documents.filter((name) => !name.endsWith("-history.md"))) {
    const text = readFileSync(join(root, document), "utf8").replace(/```[\s\S]*?```/g, "");
    for (const [, written] of text.matchAll(/`([^`\n]+)`/g)) {
      const path = claimedPath(written.trim(), topLevel);
      if (!path || namedAsOthers.has(path) || notInTheRepository.some((p) => p.test(path)))
        continue;
      const found = path.includes("/")
        ? holds(normalize(path)) ||
          holds(normalize(join(dirname(document), path))) ||
          [...files, ...folders].some((entry) =>
            `${entry}/`.endsWith(`/${path.replace(/\/?$/, "/")}`),
          )
        : names.has(path);
      if (!found) missing.push(`${document}: ${path}`);
    }
  }
  expect(missing).toEqual([]);
});

test("docs: the path check sees a renamed file", () => {
  const topLevel = new Set(["services", "shared", "test"]);
  expect(claimedPath("services/api/src/app.ts", topLevel)).toBe("services/api/src/app.ts");
  expect(claimedPath("review-three.test.ts", topLevel)).toBe("review-three.test.ts");
  expect(claimedPath("products/hot-reads.ts", topLevel)).toBe("products/hot-reads.ts");
  for (const other of [
    "/api/products",
    "application/json",
    "@commerce/client",
    "npm run test:fast",
  ])
    expect(claimedPath(other, topLevel)).toBeUndefined();
});

const numberWords = [
  "zero",
  "one",
  "two",
  "three",
  "four",
  "five",
  "six",
  "seven",
  "eight",
  "nine",
  "ten",
  "eleven",
  "twelve",
  "thirteen",
  "fourteen",
  "fifteen",
  "sixteen",
  "seventeen",
  "eighteen",
  "nineteen",
  "twenty",
];

/** The tables a service's `db/schema.ts` defines: `<schema>.table("name"` and the shared ones. */
function tablesOf(service: "api" | "payments"): string[] {
  const text = readFileSync(join(root, `services/${service}/src/db/schema.ts`), "utf8");
  const tables = [...text.matchAll(/\b\w+\.table\(\s*"([a-z_]+)"/g)].map((m) => m[1]);
  if (/\boutboxTable\(/.test(text)) tables.push("outbox");
  if (/\bauditLogTable\(/.test(text)) tables.push("audit_log");
  return tables.sort();
}

test("docs: architecture.md's database picture has every table of both schemas, and their counts", () => {
  const text = readFileSync(join(root, "docs/architecture.md"), "utf8");
  const counts = text.match(/The api's (\w+) tables .*?; payments' (\w+), of/s);
  const api = tablesOf("api");
  const payments = tablesOf("payments");
  expect(counts?.slice(1)).toEqual([numberWords[api.length], numberWords[payments.length]]);
  const picture = text.slice(text.indexOf("PostgreSQL ─"), text.indexOf("schema drizzle"));
  const drawn = new Set(picture.match(/[a-z]+(?:_[a-z]+)*/g));
  expect([...api, ...payments].filter((table) => !drawn.has(table))).toEqual([]);
});

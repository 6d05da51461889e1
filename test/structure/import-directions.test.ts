import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/**
 * The house's imports run one way (STYLE.md): plug-ins depend on a neutral contract, never on
 * their host, and no folder imports a folder that imports it back. Read from the sources as text:
 * both services, shared, the console and the typed client; a file at a source root is a node of
 * its own; type-only imports and our packages' imports (`@commerce/api/app`) count.
 */
const root = resolve(import.meta.dir, "../..");
const sourceRoots = [
  "shared/src",
  "services/api/src",
  "services/payments/src",
  "services/api/console/src",
  "packages/client/src",
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(name) && !/\.test\.ts$/.test(name) ? [path] : [];
  });
}

const importPattern = /(?:^|\n)\s*(?:import|export)[^"'`;]*?from\s+["']([^"']+)["']/g;

const asFile = (path: string) => {
  if (/\.(ts|json)$/.test(path)) return path;
  return existsSync(`${path}.ts`) ? `${path}.ts` : join(path, "index.ts");
};

/** Each workspace package's exports (`@commerce/api/app` → its file), wildcards as prefixes. */
const packageExports = ["shared", "services/api", "services/payments", "packages/client"].flatMap(
  (folder) => {
    const manifest = JSON.parse(readFileSync(join(root, folder, "package.json"), "utf8"));
    return Object.entries(manifest.exports ?? {}).map(([subpath, target]) => ({
      name: `${manifest.name}${subpath.slice(1)}`,
      file: join(folder, String(target)),
    }));
  },
);

/** A package import (`@commerce/...`) as the path of the file it resolves to, if it is ours. */
function packageFile(spec: string): string | undefined {
  for (const { name, file } of packageExports) {
    if (name === spec) return file;
    const star = name.indexOf("*");
    if (star >= 0 && spec.startsWith(name.slice(0, star)))
      return file.replace("*", spec.slice(star));
  }
}

/** Our packages' and relative imports (type-only ones too), as paths from the repository's root. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(importPattern)].flatMap(([, spec]) => {
    if (spec.startsWith("@commerce/")) return [packageFile(spec) ?? spec];
    if (spec.startsWith(".")) return [relative(root, asFile(resolve(dirname(file), spec)))];
    return [];
  });
}

const edges = sourceRoots.flatMap((dir) =>
  sourceFiles(join(root, dir)).flatMap((file) =>
    importsOf(file).map((target) => ({ from: relative(root, file), to: target })),
  ),
);

/** A file's folder; a file at a source root (`deps.ts`, `app.ts`) is a node of its own. */
const folderOf = (path: string) => (sourceRoots.includes(dirname(path)) ? path : dirname(path));

function folderCycles(): string[][] {
  const graph = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    const [a, b] = [folderOf(from), folderOf(to)];
    if (a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`)) continue;
    graph.set(a, (graph.get(a) ?? new Set()).add(b));
  }
  // Tarjan's strongly connected components: a component of two or more folders is a loop.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node) as number);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (stack.includes(next))
        low.set(node, Math.min(low.get(node) as number, index.get(next) as number));
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string | undefined;
      do {
        member = stack.pop();
        if (member) component.push(member);
      } while (member !== node);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return cycles;
}

const importsFrom = (fromPrefix: string, toPrefix: string) =>
  edges.filter(({ from, to }) => from.startsWith(fromPrefix) && to.startsWith(toPrefix));

describe("imports run one way", () => {
  test("no folder imports a folder that imports it back", () => {
    expect(folderCycles()).toEqual([]);
  });

  test("the console reaches the services only through the typed client", () => {
    const console = "services/api/console/src/";
    expect(importsFrom(console, "services/api/src/")).toEqual([]);
    expect(importsFrom(console, "services/payments/src/")).toEqual([]);
    expect(importsFrom(console, "packages/client/src/browser.ts")).not.toEqual([]);
    // The client's types come from the apps themselves (Eden), as a package import resolves them.
    expect(importsFrom("packages/client/src/", "services/api/src/app.ts")).not.toEqual([]);
  });

  test("the contract imports no plumbing and no service", () => {
    expect(importsFrom("shared/src/contract/", "shared/src/platform/")).toEqual([]);
    expect(importsFrom("shared/src/", "services/")).toEqual([]);
  });

  test("payment providers import their toolkit, never the intake that hosts them nor each other", () => {
    const providers = "services/payments/src/modules/providers/";
    expect(importsFrom(providers, "services/payments/src/modules/notifications")).toEqual([]);
    const across = edges.filter(({ from, to }) => {
      const [a, b] = [from, to].map((path) => path.slice(providers.length).split("/")[0]);
      const host = a === "index.ts" || b === "provider.ts";
      return from.startsWith(providers) && to.startsWith(providers) && a !== b && !host;
    });
    expect(across).toEqual([]);
  });

  test("the loop detector finds a loop through a file at a service's root, type-only included", () => {
    edges.push({
      from: "services/payments/src/deps.ts",
      to: "services/payments/src/modules/x/a.ts",
    });
    edges.push({
      from: "services/payments/src/modules/x/b.ts",
      to: "services/payments/src/deps.ts",
    });
    try {
      expect(folderCycles()).toContainEqual([
        "services/payments/src/deps.ts",
        "services/payments/src/modules/x",
      ]);
    } finally {
      edges.splice(-2, 2);
    }
  });

  test("the loop detector finds a planted loop", () => {
    edges.push({ from: "shared/src/platform/x.ts", to: "shared/src/contract/y.ts" });
    edges.push({ from: "shared/src/contract/y.ts", to: "shared/src/platform/x.ts" });
    try {
      expect(folderCycles()).toContainEqual(["shared/src/contract", "shared/src/platform"]);
    } finally {
      edges.splice(-2, 2);
    }
  });
});

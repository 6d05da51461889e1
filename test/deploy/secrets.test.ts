import { afterAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import dockerignore from "@balena/dockerignore";
import { runToEnd } from "@commerce/testing/launch";
import { importSPKI, jwtVerify } from "jose";

const root = new URL("../..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "secrets-"));
copyFileSync(join(root, "docker-compose.yml"), join(dir, "docker-compose.yml"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a repository script with the temp folder as its working directory (Bun loads its .env). */
const script = (name: string, args: string[] = []) =>
  runToEnd([process.execPath, `${root}scripts/${name}.ts`, ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "" },
  });

const parseEnv = (text: string) =>
  Object.fromEntries(
    text
      .split("\n")
      .filter((line) => /^[A-Z0-9_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
  );

/**
 * The build context `docker build .` would send (N20): every file under the repository's root
 * that `.dockerignore` (as Docker reads it: `@balena/dockerignore`, a port of Docker's matcher)
 * keeps, with `extra` files added as if they were there. `ignoreFile` is the rules' text.
 */
function buildContext(ignoreFile: string, extra: string[]): string[] {
  const rules = ignoreFile.split("\n");
  // Without exceptions (`!`), a directory left out leaves out all it holds, so it is not walked.
  expect(rules.some((rule) => rule.trim().startsWith("!"))).toBe(false);
  const ignored = dockerignore().add(rules);
  const files: string[] = [];
  const walk = (relative: string) => {
    for (const entry of readdirSync(join(root, relative), { withFileTypes: true })) {
      const path = relative ? `${relative}/${entry.name}` : entry.name;
      if (ignored.ignores(path)) continue;
      if (entry.isDirectory()) walk(path);
      else files.push(path);
    }
  };
  walk("");
  return [...files, ...extra.filter((path) => !ignored.ignores(path))];
}

describe("section 1: npm run secrets", () => {
  test("section 1: npm run secrets writes a .env that docker-compose config accepts as it is, the private key apart in a 0600 file", async () => {
    const first = await script("secrets");
    expect({ code: first.code, err: first.err }).toEqual({ code: 0, err: "" });
    const text = readFileSync(join(dir, ".env"), "utf8");
    const env = parseEnv(text);
    // Every variable compose requires (`${NAME:?...}`) is there and not empty.
    const compose = readFileSync(join(dir, "docker-compose.yml"), "utf8");
    const required = [...compose.matchAll(/\$\{([A-Z0-9_]+):\?/g)].map((m) => m[1]);
    expect(required.length).toBeGreaterThanOrEqual(10);
    for (const name of required)
      expect({ name, value: env[name] ?? "" }).not.toEqual({ name, value: "" });
    // Fresh values, none of them shared.
    const secrets = Object.entries(env).filter(([n]) => /PASSWORD|SECRET|TOKEN/.test(n));
    expect(new Set(secrets.map(([, v]) => v)).size).toBe(secrets.length);
    for (const [, value] of secrets) expect(value.length).toBeGreaterThanOrEqual(32);
    // The private key never in .env; in its own file, readable by its owner only.
    expect(text).not.toContain("PRIVATE KEY");
    expect(statSync(join(dir, "auth-private.pem")).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, ".env")).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, "auth-private.pem"), "utf8")).toContain("BEGIN PRIVATE KEY");

    const config = Bun.spawnSync(["docker-compose", "-f", "docker-compose.yml", "config", "-q"], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "" },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect({ code: config.exitCode, err: config.stderr.toString() }).toEqual({ code: 0, err: "" });
  });

  test("section 1: npm run token signs with the private key file; the .env's public key, issuer and audience verify it", async () => {
    const env = parseEnv(readFileSync(join(dir, ".env"), "utf8"));
    const issued = await script("token", ["--sub", "ops", "--admin"]);
    expect(issued.code).toBe(0);
    const key = await importSPKI(env.AUTH_PUBLIC_KEY.replaceAll("\\n", "\n"), "ES256");
    const { payload } = await jwtVerify(issued.out.trim(), key, {
      issuer: env.AUTH_ISSUER,
      audience: env.AUTH_AUDIENCE,
    });
    expect(payload).toMatchObject({ sub: "ops", scope: "admin" });
  });

  test("N20 (v5): no file npm run secrets writes is in the build context, where --dir put it or at the root", () => {
    const written = readdirSync(dir).filter((name) => name !== "docker-compose.yml");
    expect(written.sort()).toEqual([".env", "auth-private.pem"]);
    // As `npm run secrets` writes them by default (the root) and with --dir (a folder).
    const placed = written.flatMap((name) => [name, `deploy/${name}`, `scripts/local/${name}`]);
    const ignoreFile = readFileSync(join(root, ".dockerignore"), "utf8");
    const context = buildContext(ignoreFile, placed);
    expect(context.filter((path) => placed.includes(path))).toEqual([]);
    // The context is the source tree: the check sees what the image is built from.
    expect(context).toContain("Dockerfile");
    expect(context).toContain("services/api/src/main.ts");
    expect(context.some((path) => path.startsWith("node_modules/"))).toBe(false);
    // And it can fail: without its secret rules, the private key is in the context (as it was).
    const before = ignoreFile
      .split("\n")
      .filter((rule) => !/pem|env/.test(rule))
      .join("\n");
    expect(buildContext(before, placed)).toContain("auth-private.pem");
  });

  test("section 1: a second npm run secrets refuses, in one line, and changes nothing", async () => {
    const before = readFileSync(join(dir, ".env"), "utf8");
    const again = await script("secrets");
    expect(again.code).not.toBe(0);
    expect(again.err.trim().split("\n")).toHaveLength(1);
    expect(again.err).toContain("does not overwrite");
    expect(readFileSync(join(dir, ".env"), "utf8")).toBe(before);
  });
});

import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = new URL("../..", import.meta.url).pathname;

/** Placeholder values for every variable compose requires, so `config` can interpolate. */
function requiredEnv(): Record<string, string> {
  const text = readFileSync(join(root, "docker-compose.yml"), "utf8");
  const names = [...text.matchAll(/\$\{([A-Z0-9_]+):\?/g)].map((m) => m[1]);
  return Object.fromEntries(names.map((name) => [name, `placeholder-${name.toLowerCase()}`]));
}

type Service = Record<string, any>;

/** An empty env file, so a developer's own .env cannot change what is checked. */
const envDir = mkdtempSync(join(tmpdir(), "n19-env-"));
const emptyEnv = join(envDir, "empty.env");
writeFileSync(emptyEnv, "");
afterAll(() => rmSync(envDir, { recursive: true, force: true }));

/** `docker-compose config` of the given files, parsed: what compose will actually run. */
function composeConfig(
  files: string[],
  cwd = root,
  env: Record<string, string> = {},
): Record<string, Service> {
  const run = Bun.spawnSync(
    ["docker-compose", ...files.flatMap((f) => ["-f", f]), "--env-file", emptyEnv, "config"],
    {
      cwd,
      env: { PATH: process.env.PATH ?? "", ...requiredEnv(), ...env },
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  if (run.exitCode !== 0) throw new Error(`docker-compose config: ${run.stderr.toString()}`);
  return (Bun.YAML.parse(run.stdout.toString()) as { services: Record<string, Service> }).services;
}

/** What N19 asks of each service; an empty list when it holds. */
function n19Problems(name: string, service: Service): string[] {
  const problems: string[] = [];
  const user = String(service.user ?? "");
  if (!user || /^(root|0)(:|$)/.test(user)) problems.push(`${name}: runs as root`);
  if (service.read_only !== true) problems.push(`${name}: root file system is writable`);
  if (!(service.cap_drop ?? []).includes("ALL")) problems.push(`${name}: capabilities not dropped`);
  if (!(service.security_opt ?? []).includes("no-new-privileges:true"))
    problems.push(`${name}: may gain privileges`);
  if (!service.mem_limit && !service.deploy?.resources?.limits?.memory)
    problems.push(`${name}: no memory limit`);
  return problems;
}

describe("N19: the compose deployment runs nothing as root", () => {
  test("N19: every service of docker-compose.yml (and with docker-compose.cluster.yml) is non-root, read-only, without capabilities or new privileges, and memory-limited", () => {
    for (const files of [
      ["docker-compose.yml"],
      ["docker-compose.yml", "docker-compose.cluster.yml"],
    ]) {
      const services = composeConfig(files);
      expect(Object.keys(services).length).toBeGreaterThanOrEqual(files.length === 1 ? 4 : 6);
      const problems = Object.entries(services).flatMap(([name, s]) => n19Problems(name, s));
      expect({ files, problems }).toEqual({ files, problems: [] });
    }
  });

  test("N19: a service that runs as root or writes its root file system is caught (the check can fail)", () => {
    const dir = mkdtempSync(join(tmpdir(), "n19-"));
    try {
      const text = readFileSync(join(root, "docker-compose.yml"), "utf8");
      const broken = text
        .replace('user: "1000:1000"', 'user: "0:0"')
        .replace("<<: *hardened\n    # Any uid", "# Any uid");
      expect(broken).not.toBe(text);
      writeFileSync(join(dir, "docker-compose.yml"), broken);
      const services = composeConfig(["docker-compose.yml"], dir);
      expect(n19Problems("nats", services.nats)).toEqual([
        "nats: runs as root",
        "nats: root file system is writable",
        "nats: capabilities not dropped",
        "nats: may gain privileges",
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("N19: the public URLs a browser or provider reaches default to https, and the images are the ones Kubernetes runs", () => {
    const services = composeConfig(["docker-compose.yml"]);
    expect(services.api.environment.PAYMENTS_PUBLIC_URL).toStartWith("https://");
    expect(services.payments.environment.CONSOLE_ORIGINS).toStartWith("https://");
    expect(services.api.image).toBe("commerce-api");
    expect(services.payments.image).toBe("commerce-payments");
    // The services' tmpfs for scratch files; PostgreSQL's socket directory.
    expect(services.api.tmpfs).toContain("/tmp");
    expect(services.postgres.tmpfs).toContain("/var/run/postgresql");
  });

  test("F2, B1: compose passes payments the providers' API settings (refunds, reconciliation)", () => {
    const services = composeConfig(["docker-compose.yml"]);
    for (const name of [
      "STRIPE_API_KEY",
      "ADYEN_API_KEY",
      "ADYEN_CHECKOUT_URL",
      "ADYEN_REPORT_USERNAME",
      "ADYEN_REPORT_PASSWORD",
      "ADYEN_REPORT_URL_PREFIX",
      "REFUND_GIVE_UP_HOURS",
    ])
      expect(Object.keys(services.payments.environment)).toContain(name);
    // The api never holds a provider's key.
    expect(Object.keys(services.api.environment)).not.toContain("STRIPE_API_KEY");
  });
});

describe("E5 (v5): the image and compose run both services in production mode", () => {
  test("E5 (v5): the Dockerfile's runtime image sets NODE_ENV=production, and compose (alone and with the cluster file) gives both services NODE_ENV=production", () => {
    const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
    const runtime = dockerfile.slice(dockerfile.indexOf("AS runtime"));
    expect(runtime.split("\nFROM ")[0]).toMatch(/^ENV NODE_ENV=production$/m);
    // Not in the build stage: npm ci would leave out the dev dependencies the build needs.
    expect(dockerfile.slice(0, dockerfile.indexOf("AS runtime"))).not.toContain("NODE_ENV");
    for (const files of [
      ["docker-compose.yml"],
      ["docker-compose.yml", "docker-compose.cluster.yml"],
    ]) {
      const services = composeConfig(files);
      const modes = Object.entries(services)
        .filter(([, s]) => /^commerce-/.test(s.image ?? ""))
        .map(([name, s]) => [name, s.environment?.NODE_ENV]);
      expect(modes.length).toBeGreaterThanOrEqual(2);
      for (const [name, mode] of modes)
        expect({ name, mode }).toEqual({ name, mode: "production" });
    }
  });
});

describe("section 1: the compose deployment as docker-compose 1.29 reads it", () => {
  test("section 1: PUBLISH_ADDRESS publishes the services' ports on loopback for a proxy in front; unset, on every interface", () => {
    // docker-compose 1.29 writes a port as text (`127.0.0.1:3000:3000/tcp`), Compose v2 as an object.
    type Port = string | { host_ip?: string; published: number | string };
    const address = (port: Port) =>
      typeof port === "string"
        ? port.split(":").slice(0, -1).join(":")
        : `${port.host_ip ?? "0.0.0.0"}:${port.published}`;
    const published = (env: Record<string, string>) => {
      const services = composeConfig(["docker-compose.yml"], root, env);
      return ["api", "payments"].map((name) => (services[name].ports as Port[]).map(address));
    };
    expect(published({ PUBLISH_ADDRESS: "127.0.0.1" })).toEqual([
      ["127.0.0.1:3000"],
      ["127.0.0.1:3001"],
    ]);
    expect(published({})).toEqual([["0.0.0.0:3000"], ["0.0.0.0:3001"]]);
  });

  test("section 1: the docs' compose commands are docker-compose 1.29's: no Compose v2 command, no !override, no compose cp", () => {
    const files = [
      "README.md",
      ...[...new Bun.Glob("docs/*.md").scanSync({ cwd: root })].filter(
        (f) => !f.includes("history"),
      ),
      "docker-compose.yml",
      "docker-compose.cluster.yml",
      "scripts/secrets.ts",
    ];
    const found = files.flatMap((file) =>
      readFileSync(join(root, file), "utf8")
        .split("\n")
        .map((line, i) => ({ at: `${file}:${i + 1}`, line }))
        .filter(({ line }) =>
          /(?<!`)docker compose (?!takes)|!override|compose(?:-|\s)cp\b/.test(line),
        )
        .map(({ at, line }) => `${at}: ${line.trim()}`),
    );
    expect(found).toEqual([]);
  });
});

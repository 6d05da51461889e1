import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root, serviceCommand } from "@commerce/testing/launch";
import { startNpmStart } from "@commerce/testing/npm-start";
import { jwtVerify } from "jose";

/**
 * O10: the development loop stands apart from a deployment's files, and what `npm start` prints
 * to use the system can be printed again at any moment.
 */

setDefaultTimeout(120_000);

const scripts: Record<string, string> = JSON.parse(
  readFileSync(`${root}package.json`, "utf8"),
).scripts;

/** An npm script's command as npm runs it, with Bun from this install and paths made absolute. */
function scriptCommand(name: string, ...args: string[]): string[] {
  const [bun, ...rest] = scripts[name].split(" ");
  expect(bun).toBe("bun");
  return [
    process.execPath,
    ...rest.map((part) => (/^(scripts|services|bench)\//.test(part) ? `${root}${part}` : part)),
    ...args,
  ];
}

async function run(command: string[], cwd: string) {
  const child = Bun.spawn(command, {
    cwd,
    env: { PATH: process.env.PATH ?? "" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { stdout, stderr, code };
}

describe("O10: the development loop", () => {
  test("O10: every npm script that runs Bun, and each service npm start runs, ignores a .env in the checkout (npm run secrets writes one for compose)", () => {
    const bunScripts = Object.entries(scripts).filter(([, command]) => command.startsWith("bun "));
    expect(bunScripts.length).toBeGreaterThan(5);
    for (const [name, command] of bunScripts)
      expect([name, command]).toEqual([name, expect.stringContaining("--no-env-file")]);
    const start = readFileSync(`${root}scripts/start.ts`, "utf8");
    expect(start).toMatch(
      /\[process\.execPath, "--no-env-file", \.\.\.bunServiceFlags, `services\//,
    );
  });

  test("O10: each service, from source or as its binary, started beside a .env ignores it", async () => {
    const checkout = mkdtempSync(join(tmpdir(), "o10-"));
    try {
      writeFileSync(join(checkout, ".env"), "DATABASE_URL=postgres://nobody@127.0.0.1:1/none\n");
      for (const service of ["api", "payments"] as const) {
        const command = serviceCommand(service, process.env.E2E_BINARIES === "1");
        const { stderr, code } = await run(command, checkout);
        expect([service, code, stderr.trim()]).toEqual([
          service,
          1,
          "configuration error: DATABASE_URL is required but not set",
        ]);
      }
    } finally {
      rmSync(checkout, { recursive: true, force: true });
    }
  });

  test("O10: npm run token beside a compose .env signs with npm start's key, not the .env's", async () => {
    const checkout = mkdtempSync(join(tmpdir(), "o10-"));
    try {
      const fromDotenv = "secret-of-the-compose-env-file-0123456789";
      const fromStart = "secret-that-npm-start-keeps-in-data-0123456789";
      writeFileSync(join(checkout, ".env"), `AUTH_JWT_SECRET=${fromDotenv}\n`);
      mkdirSync(join(checkout, ".data"));
      writeFileSync(join(checkout, ".data/auth-jwt-secret"), `${fromStart}\n`);
      const { stdout, code } = await run(scriptCommand("token", "--sub", "alice"), checkout);
      expect(code).toBe(0);
      const token = stdout.trim().split("\n").at(-1) as string;
      const key = (secret: string) => new TextEncoder().encode(secret);
      expect((await jwtVerify(token, key(fromStart))).payload.sub).toBe("alice");
      expect(await jwtVerify(token, key(fromDotenv)).catch(() => "refused")).toBe("refused");
    } finally {
      rmSync(checkout, { recursive: true, force: true });
    }
  });

  test("O10: npm run where prints again the running npm start's URLs, a fresh one-time console link, tokens the api takes and a demo order", async () => {
    const start = await startNpmStart();
    try {
      const first = await start.ready(90_000);
      const apiUrl = `http://127.0.0.1:${start.ports.api}`;
      const { stdout, code } = await run(scriptCommand("where"), root);
      expect(code).toBe(0);
      // Other npm starts of this checkout (other test files) may be listed too: ours is the part
      // that begins with our api's URL.
      const ours = stdout.split(/^api {7}/m).find((part) => part.startsWith(`${apiUrl} `));
      expect(ours).toBeDefined();
      const text = ours as string;
      const codeIn = (output: string) => output.match(/\/console#code=(\S+)/)?.[1];
      expect(codeIn(text)).toBeDefined();
      expect(codeIn(text)).not.toBe(codeIn(first));
      const exchanged = await fetch(`${apiUrl}/console/session`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ code: codeIn(text) }),
      });
      expect(exchanged.status).toBe(200);
      const admin = text.match(/ADMIN_TOKEN=(\S+)/)?.[1];
      const customer = text.match(/export TOKEN=(\S+)/)?.[1];
      const order = Number(text.match(/Demo order (\d+)/)?.[1]);
      const read = await fetch(`${apiUrl}/api/orders/${order}`, {
        headers: { authorization: `Bearer ${customer}` },
      });
      expect(read.status).toBe(200);
      expect(((await read.json()) as { status: string }).status).toBe("created");
      const products = await fetch(`${apiUrl}/api/products`, {
        headers: { authorization: `Bearer ${admin}` },
      });
      expect(products.status).toBe(200);
      // The cancel example names an order of its own, not the one it says to pay and refund.
      const cancelled = text.match(/-X PATCH [^\n]*\/api\/orders\/(\d+)/)?.[1];
      expect(cancelled).toBeDefined();
      expect(Number(cancelled)).not.toBe(order);
      expect(text).toContain("npm run where prints this again");
    } finally {
      await start.stop();
    }
    const after = await run(scriptCommand("where"), root);
    expect(after.stdout).not.toContain(`127.0.0.1:${start.ports.api} `);
  });
});

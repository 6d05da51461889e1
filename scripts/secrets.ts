/**
 * `npm run secrets` (CONTRACT section 1): writes a `.env` that `docker-compose up` accepts as it
 * is, every secret and password freshly generated:
 *   npm run secrets -- [--issuer https://id.shop.example] [--audience shop]
 *                      [--api-url https://api.shop.example] [--payments-url https://payments.shop.example]
 * The token key pair is ES256 (P-256): the public key goes into `.env` as AUTH_PUBLIC_KEY (N6,
 * on one line, newlines written as \n), the private key into its own file, auth-private.pem, mode
 * 0600, never into `.env`; `.env` names that file in AUTH_PRIVATE_KEY_FILE, which only
 * `npm run token` reads (compose passes it to no container). It refuses to overwrite an existing
 * `.env` or key file. What it fills is checked against docker-compose.yml's required variables
 * (`${NAME:?...}`), so the two cannot drift apart silently.
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { closeSync, existsSync, openSync, readFileSync, writeSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    dir: { type: "string", default: "." },
    issuer: { type: "string", default: "https://id.shop.example" },
    audience: { type: "string", default: "shop" },
    "api-url": { type: "string" },
    "payments-url": { type: "string" },
  },
});

const fail = (message: string): never => {
  console.error(message);
  process.exit(1);
};

const dir = resolve(values.dir);
const envPath = join(dir, ".env");
const keyFile = "auth-private.pem";
const keyPath = join(dir, keyFile);
if (existsSync(envPath)) fail(`${envPath} exists; npm run secrets does not overwrite it`);
if (existsSync(keyPath)) fail(`${keyPath} exists; npm run secrets does not overwrite it`);
for (const [name, url] of [
  ["--issuer", values.issuer],
  ["--api-url", values["api-url"]],
  ["--payments-url", values["payments-url"]],
] as const)
  if (url !== undefined && !/^https:\/\/[^\s/]+/.test(url)) fail(`${name} must be an https URL`);
if (!/^[\x21-\x7e]+$/.test(values.audience)) fail("--audience must be printable, without spaces");

/** URL-safe random text: the role passwords go into DATABASE_URL (README, N14). */
const random = (bytes: number) => randomBytes(bytes).toString("hex");

const pair = generateKeyPairSync("ec", { namedCurve: "P-256" });
const publicPem = pair.publicKey.export({ type: "spki", format: "pem" }).toString();
const privatePem = pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString();

const generated: Record<string, string> = {
  AUTH_PUBLIC_KEY: publicPem.trim().replaceAll("\n", "\\n"),
  AUTH_ISSUER: values.issuer,
  AUTH_AUDIENCE: values.audience,
  METRICS_TOKEN: random(24),
  PAYMENT_WEBHOOK_SECRETS: `whsec_${random(24)}`,
  POSTGRES_PASSWORD: random(16),
  POSTGRES_API_PASSWORD: random(16),
  POSTGRES_PAYMENTS_PASSWORD: random(16),
  NATS_API_PASSWORD: random(16),
  NATS_PAYMENTS_PASSWORD: random(16),
};
const urls: Record<string, string> = {};
if (values["payments-url"]) urls.PAYMENTS_PUBLIC_URL = values["payments-url"];
if (values["api-url"]) urls.CONSOLE_ORIGINS = values["api-url"];

// Every variable compose requires must be here: a new one in docker-compose.yml fails loudly.
const composePath = existsSync(join(dir, "docker-compose.yml"))
  ? join(dir, "docker-compose.yml")
  : new URL("../docker-compose.yml", import.meta.url).pathname;
const required = new Set(
  [...readFileSync(composePath, "utf8").matchAll(/\$\{([A-Z0-9_]+):\?/g)].map((m) => m[1]),
);
const unknown = [...required].filter((name) => !(name in generated));
if (unknown.length > 0)
  fail(`docker-compose.yml requires ${unknown.join(", ")}, which npm run secrets does not make`);

const lines = [
  `# Written by npm run secrets on ${new Date().toISOString()}. Keep it secret; it is git-ignored.`,
  "# docker-compose reads it; each container gets only its own settings (docker-compose.yml).",
  ...Object.entries(generated).map(([name, value]) => `${name}=${value}`),
  ...Object.entries(urls).map(([name, value]) => `${name}=${value}`),
  "# For npm run token only (the private key's file; no container gets it, N6):",
  `AUTH_PRIVATE_KEY_FILE=${keyFile}`,
  "",
];

/** Creates the file with `mode`, failing if it exists (no window for another writer). */
function create(path: string, text: string, mode: number) {
  let fd: number;
  try {
    fd = openSync(path, "wx", mode);
  } catch {
    return fail(`${path} exists or cannot be created; npm run secrets does not overwrite it`);
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}

create(keyPath, privatePem, 0o600);
create(envPath, lines.join("\n"), 0o600);
console.log(`Wrote ${envPath} and ${keyPath} (mode 0600). Next: docker-compose up --build`);
console.log("An admin token: npm run -s token -- --sub ops --admin --ttl 30m");

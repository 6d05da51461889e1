/**
 * O10: the lines `npm start` prints to use the running system, and where it keeps what
 * `npm run where` needs to print them again: `.data/where-<api port>.json` (the URLs and what was
 * chosen, no secret; the token key stays in `.data/auth-jwt-secret` or the environment), one per
 * `npm start` running in the checkout.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { demo } from "./demo";
import { errorText } from "./probes";
import { providerLines } from "./providers";

export type Running = {
  pid: number;
  urls: { api: string; payments: string };
  paymentsPort: number;
  database: string;
  nats: string;
  /** The payments service's provider settings as started (names only matter: which are set). */
  providers: string[];
};

const whereFile = (dataDir: string, apiUrl: string) =>
  `${dataDir}/where-${new URL(apiUrl).port}.json`;

export function rememberRunning(dataDir: string, running: Running): void {
  writeFileSync(whereFile(dataDir, running.urls.api), `${JSON.stringify(running, null, 2)}\n`, {
    mode: 0o600,
  });
}

export function forgetRunning(dataDir: string, running: Running | undefined): void {
  if (running) rmSync(whereFile(dataDir, running.urls.api), { force: true });
}

/** Every `npm start` of this checkout that still runs, as each wrote itself down. */
export function runningNow(dataDir: string): Running[] {
  if (!existsSync(dataDir)) return [];
  return readdirSync(dataDir)
    .filter((name) => /^where-\d+\.json$/.test(name))
    .flatMap((name) => {
      const running = JSON.parse(readFileSync(`${dataDir}/${name}`, "utf8")) as Running;
      try {
        process.kill(running.pid, 0);
        return [running];
      } catch {
        rmSync(`${dataDir}/${name}`, { force: true });
        return [];
      }
    });
}

/** The URLs, a fresh console sign-in link, tokens and a demo order with the commands to try. */
export async function bannerLines(
  running: Running,
  jwtSecret: string,
  say: (line: string) => void,
): Promise<string[]> {
  const { urls } = running;
  const configured = Object.fromEntries(running.providers.map((name) => [name, "set"]));
  const lines = [
    "",
    `api       ${urls.api}   Swagger UI ${urls.api}/swagger   console ${urls.api}/console`,
    `payments  ${urls.payments}   Swagger UI ${urls.payments}/swagger`,
    `database  ${running.database}`,
    `nats      ${running.nats}`,
    ...providerLines(urls.payments, configured),
    "",
  ];
  try {
    lines.push(
      ...(await demo({ apiUrl: urls.api, paymentsPort: running.paymentsPort, jwtSecret }, say)),
    );
  } catch (error) {
    lines.push(`(no demo data or tokens: ${errorText(error)})`, "");
  }
  lines.push("npm run where prints this again (a fresh sign-in link, tokens and demo order).");
  return lines;
}

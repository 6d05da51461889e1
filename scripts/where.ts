/**
 * `npm run where` (O10): prints again what `npm start` printed to use the running system — the
 * URLs, a fresh console sign-in link, tokens, a fresh demo order and the commands to try — since
 * those lines scroll away under the services' request logs. Reads `.data/where-<port>.json`, which
 * each running `npm start` of this checkout keeps, and signs tokens with the key `npm start` gave the services
 * (AUTH_JWT_SECRET, else `.data/auth-jwt-secret`).
 */
import { existsSync, readFileSync } from "node:fs";
import { bannerLines, runningNow } from "./start/banner";

const root = new URL("..", import.meta.url).pathname;
const dataDir = `${root}.data`;

const started = runningNow(dataDir);
if (started.length === 0) {
  console.error("npm start is not running in this checkout (start it with npm start)");
  process.exit(1);
}
const secretFile = `${dataDir}/auth-jwt-secret`;
const jwtSecret =
  process.env.AUTH_JWT_SECRET?.trim() ||
  (existsSync(secretFile) ? readFileSync(secretFile, "utf8").trim() : "");
if (!jwtSecret) {
  console.error(
    "no AUTH_JWT_SECRET and no .data/auth-jwt-secret: start the services with npm start",
  );
  process.exit(1);
}
for (const running of started) {
  const lines = await bannerLines(running, jwtSecret, (line) => console.log(line));
  for (const line of lines) console.log(line);
}

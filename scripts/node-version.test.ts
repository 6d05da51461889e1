import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const read = (file: string) => readFileSync(join(root, file), "utf8");

test("section 1: the Node.js the README and package.json ask for satisfies every locked package's engines", () => {
  const asked = JSON.parse(read("package.json")).engines.node as string;
  const least = /^>=(\d+\.\d+\.\d+)$/.exec(asked)?.[1];
  expect(least).toBeDefined();
  const packages = JSON.parse(read("package-lock.json")).packages as Record<
    string,
    { engines?: { node?: string } }
  >;
  const refused = Object.entries(packages)
    .filter(([path, info]) => path && info.engines?.node)
    .filter(([, info]) => !Bun.semver.satisfies(least as string, info.engines?.node as string))
    .map(([path, info]) => `${path.replace(/^.*node_modules\//, "")} ${info.engines?.node}`);
  expect(refused).toEqual([]);
  const [major, minor] = (least as string).split(".");
  expect(read("README.md")).toContain(`Needs Node.js ${major}.${minor} or later`);
  // The image builds with that major version.
  expect(read("Dockerfile")).toContain(`FROM node:${major}-`);
});

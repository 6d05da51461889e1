import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";

/**
 * E6: one request pipeline, declared once (`shared/src/platform/http/pipeline.ts`). A hook that
 * every request meets is a step of that list, so it reaches every route of both services; no
 * route is served beside the app (Bun routes, a second server), where a step would be missed.
 * Read from the sources as text.
 */
const root = resolve(import.meta.dir, "../..");
const sourceRoots = ["shared/src", "services/api/src", "services/payments/src"];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(name) && !/\.test\.ts$/.test(name) ? [path] : [];
  });
}

const sources = sourceRoots.flatMap((dir) =>
  sourceFiles(join(root, dir)).map((file) => ({
    file: relative(root, file),
    text: readFileSync(file, "utf8"),
  })),
);

/** The files whose plugins are steps of the pipeline's list (or a service's own steps given to it). */
const stepFiles = [
  "shared/src/platform/http/pipeline.ts",
  "shared/src/platform/http/problems.ts",
  "shared/src/platform/http/request-limits.ts",
  "shared/src/platform/http/request-log.ts",
  "shared/src/platform/http/request-target.ts",
  "shared/src/platform/http/url-text.ts",
  "shared/src/platform/auth/bearer-auth.ts",
  "services/api/src/lib/json-body.ts",
  "services/payments/src/lib/console-cors.ts",
];

describe("one request pipeline", () => {
  test("E6: request-wide hooks are only in the pipeline's steps", () => {
    const hooked = sources
      .filter(({ text }) =>
        /\.(onRequest|onAfterResponse|onError|onParse|onTransform)\(/.test(text),
      )
      .map(({ file }) => file)
      .sort();
    expect(hooked.filter((file) => !stepFiles.includes(file))).toEqual([]);
  });

  test("E6: both apps are the one pipeline and their routes, nothing served beside them", () => {
    for (const app of ["services/api/src/app.ts", "services/payments/src/app.ts"]) {
      const text = readFileSync(join(root, app), "utf8");
      expect({ app, pipeline: text.includes("requestPipeline(") }).toEqual({ app, pipeline: true });
    }
    const beside = sources
      .filter(({ text }) => /\bserve:\s*\{|Bun\.serve\(|\broutes:\s*\{/.test(text))
      .map(({ file }) => file);
    expect(beside).toEqual([]);
    // The steps are used through the list, never added to an app one by one.
    const stepsUsedDirectly = sources
      .filter(({ file }) => !stepFiles.includes(file))
      .filter(({ text }) =>
        /\.use\((requestLog|problemErrors|requestLimits|urlText|wellFormedTarget|migrationGate)\(/.test(
          text,
        ),
      )
      .map(({ file }) => file);
    expect(stepsUsedDirectly).toEqual([]);
  });
});

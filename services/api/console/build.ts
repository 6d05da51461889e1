/**
 * Builds the operator console (U1) with Bun's bundler: its TypeScript into one browser module,
 * its page and style sheet as they are. `scripts/build.ts` runs it before compiling the api and
 * embeds the result; the api run from source runs it on the first request to /console.
 */
export type ConsoleAssets = { html: string; js: string; css: string };

const folder = new URL(".", import.meta.url).pathname;

export async function buildConsole(): Promise<ConsoleAssets> {
  const build = await Bun.build({
    entrypoints: [`${folder}src/main.ts`],
    target: "browser",
    format: "esm",
    minify: true,
  });
  if (!build.success) throw new AggregateError(build.logs, "the console does not build");
  return {
    html: await Bun.file(`${folder}index.html`).text(),
    js: await build.outputs[0].text(),
    css: await Bun.file(`${folder}console.css`).text(),
  };
}

/**
 * E5: a compiled binary runs in production mode whatever environment it is started in.
 * `npm run build` replaces `process.env.NODE_ENV` with "production" in the bundle
 * (scripts/build.ts); this module writes that into the environment, where Elysia reads it once
 * when it loads, so each main.ts imports it first. From source, NODE_ENV stays as it was set.
 */
const mode = process.env.NODE_ENV;
if (mode !== undefined) Object.assign(process.env, { NODE_ENV: mode });

export const productionMode = mode === "production";

import type { ConsoleAssets } from "../../../console/build";

/**
 * The console as `npm run build` bundled it. Run from source this is undefined and the console
 * is built on first use; scripts/build.ts replaces this module in the compiled binary.
 */
export const prebuiltConsole: ConsoleAssets | undefined = undefined;

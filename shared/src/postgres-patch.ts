import { type BunPlugin, plugin } from "bun";

/**
 * postgres.js 3.4.9 (the latest release) kills the process when a connection dies inside a
 * transaction: `begin` writes its ROLLBACK after `closed()` has dropped the socket, the write
 * runs from a setImmediate, and `socket.write` on null throws where nothing can catch it
 * (porsager/postgres#1066, #1208). A PostgreSQL restart with one transaction in flight stopped
 * the service. This plugin loads the driver with the fix its open pull requests propose: a write
 * to a closed connection rejects that connection's queries with CONNECTION_CLOSED, and `closed()`
 * forgets its pending write, so the reconnected socket's writes are flushed again. bunfig.toml
 * preloads it for every `bun` run and test; scripts/build.ts bundles it into the binaries.
 */
const fixes: Array<[string, string]> = [
  [
    "  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)",
    "  function nextWrite(fn) {\n    if (!socket) {\n      chunk = nextWriteTimer = null\n      error(Errors.connection('CONNECTION_CLOSED', options))\n      return true\n    }\n    const x = socket.write(chunk, fn)",
  ],
  [
    "    remaining = 0\n    incomings = null\n    clearImmediate(nextWriteTimer)\n",
    "    remaining = 0\n    incomings = null\n    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n",
  ],
];

function patchConnectionSource(source: string, path: string): string {
  return fixes.reduce((patched, [from, to]) => {
    if (patched.split(from).length !== 2)
      throw new Error(
        `${path} is not the postgres.js 3.4.9 this patch was written for: check whether ` +
          "porsager/postgres#1208 is fixed upstream, then update or drop shared/src/postgres-patch.ts",
      );
    return patched.replace(from, to);
  }, source);
}

export const postgresPatch: BunPlugin = {
  name: "postgres.js closed-socket write fix",
  setup(build) {
    build.onLoad(
      { filter: /[\\/]postgres[\\/](cjs[\\/])?src[\\/]connection\.js$/ },
      async (args) => ({
        contents: patchConnectionSource(await Bun.file(args.path).text(), args.path),
        loader: "js",
      }),
    );
  },
};

plugin(postgresPatch);

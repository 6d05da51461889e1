/**
 * The embedded database of `npm start`: a PGlite (PostgreSQL compiled to WebAssembly) kept in a
 * folder, served over the Postgres wire protocol by pglite-socket on a free port.
 *
 * One connection only (`?max=1`, which connectDatabase honours). A PGlite is a single Postgres
 * session, and pglite-socket 0.2.17 hands it the messages of several connections one message at a
 * time, not one Parse..Sync batch at a time: it keeps a connection's turn only while a transaction
 * is open, so after one connection's COMMIT runs another's Bind can run before the committer's
 * Sync, which closes the implicit transaction and that portal with it ("portal "" does not exist").
 * Hence one PGlite per service, each with its own pool of one.
 */
/** PostgreSQL's shared buffers in each embedded PGlite (its default is 128 MB). */
export const embeddedSharedBuffers = "16MB";

export async function startEmbeddedPostgres(
  dataDir?: string,
): Promise<{ url: string; stop(): Promise<void> }> {
  // Loaded here, not at the top of npm start: only this mode needs the WebAssembly build.
  const { PGlite } = await import("@electric-sql/pglite");
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
  // Memory: PostgreSQL's default 128 MB of shared buffers becomes WebAssembly memory that is
  // never given back, in each of the two PGlites; a tryout's data fits in far less.
  const db = await PGlite.create(dataDir, {
    startParams: [...PGlite.defaultStartParams, "-c", `shared_buffers=${embeddedSharedBuffers}`],
  });
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 1 });
  await server.start();
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres?max=1`,
    stop: async () => {
      await server.stop();
      await db.close();
    },
  };
}

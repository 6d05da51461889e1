import { eventually, freePort, testDatabaseUrl, testNatsUrl, unique } from "./basics";
import { root } from "./launch";

/**
 * `npm start` (scripts/start.ts) as the operator runs it, on free ports, against the tests'
 * PostgreSQL and NATS (a NATS_PREFIX of its own), with what it prints kept as it comes.
 * `ready()` waits for its last line ("Ctrl-C stops everything") and returns all it printed;
 * `stop()` sends SIGINT, as Ctrl-C does, and waits for it to exit.
 */
export async function startNpmStart() {
  const ports = { api: await freePort(), payments: await freePort() };
  const child = Bun.spawn([process.execPath, "--no-env-file", `${root}scripts/start.ts`], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? "",
      DATABASE_URL: testDatabaseUrl,
      NATS_URL: testNatsUrl,
      NATS_PREFIX: unique("s"),
      START_API_PORT: String(ports.api),
      START_PAYMENTS_PORT: String(ports.payments),
      LOG_LEVEL: "warn",
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  let output = "";
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.stdout as ReadableStream<Uint8Array>)
      output += decoder.decode(chunk);
  })();
  return {
    ports,
    ready: (timeoutMs: number) =>
      eventually(
        async () => (output.includes("Ctrl-C stops everything") ? output : undefined),
        timeoutMs,
        "npm start ready",
      ),
    async stop() {
      child.kill("SIGINT");
      await child.exited;
    },
  };
}

/** What answers where, for `npm start` to choose: TCP ports, PostgreSQL, NATS with JetStream. */
import { createConnection, createServer } from "node:net";
import type { NatsCredentials } from "@commerce/shared/platform/config";
import { connect as connectNats } from "nats";
import postgres from "postgres";

export type Address = { host: string; port: number };

/** Whether something accepts TCP connections there. */
export function answers({ host, port }: Address, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && !error.message.includes(code)
    ? `${error.message} (${code})`
    : error.message;
}

/** Runs one statement on a connection of its own: undefined when it worked, else the error. */
export async function tryPostgres(url: string, statement: string) {
  const sql = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await sql.unsafe(statement);
    return undefined;
  } catch (error) {
    return { code: (error as { code?: string }).code, text: errorText(error) };
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** Undefined when NATS answers there with JetStream enabled, else what is wrong. */
export async function jetStreamProblem(
  url: string,
  credentials?: NatsCredentials,
): Promise<string | undefined> {
  let nc: Awaited<ReturnType<typeof connectNats>>;
  try {
    nc = await connectNats({ servers: url, timeout: 3000, reconnect: false, ...credentials });
  } catch (error) {
    return `does not answer (${errorText(error)})`;
  }
  try {
    await nc.jetstreamManager();
    return undefined;
  } catch {
    return "answers without JetStream (run nats-server with -js)";
  } finally {
    await nc.close();
  }
}

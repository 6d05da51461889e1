import { DrizzleQueryError } from "drizzle-orm/errors";

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

const rank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export const logLevels = Object.keys(rank) as LogLevel[];

export type Logger = {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
};

/** Where a logger writes its lines. */
export type LogSink = (line: string) => void;

const stdout: LogSink = (line) => process.stdout.write(line);

function clashes(fields: LogFields, taken: Set<string>): boolean {
  for (const key in fields) if (taken.has(key)) return true;
  return false;
}

/** One JSON object per line on stdout (O6); the sink is injectable so tests can read the lines. */
export function createLogger(
  level: LogLevel = "info",
  base: LogFields = {},
  write: LogSink = stdout,
): Logger {
  const min = rank[level];
  // The line is written as text around JSON.stringify of the fields: no object is built and
  // spread per line (a line per request, O6). The base fields' JSON is made once; a call whose
  // fields name a base or a line field gets the merged object, as before, so no key repeats.
  const baseJson = JSON.stringify(base).slice(1, -1);
  const head = baseJson ? `,${baseJson}` : "";
  const taken = new Set(["time", "level", "msg", ...Object.keys(base)]);
  const log = (lvl: LogLevel, msg: string, fields?: LogFields) => {
    if (rank[lvl] < min) return;
    if (fields !== undefined && clashes(fields, taken)) {
      const line = { time: new Date().toISOString(), level: lvl, msg, ...base, ...fields };
      write(`${JSON.stringify(line)}\n`);
      return;
    }
    const rest = fields === undefined ? "" : JSON.stringify(fields).slice(1, -1);
    write(
      `{"time":"${new Date().toISOString()}","level":"${lvl}","msg":${JSON.stringify(msg)}${head}${rest ? `,${rest}` : ""}}\n`,
    );
  };
  return {
    debug: (msg, fields) => log("debug", msg, fields),
    info: (msg, fields) => log("info", msg, fields),
    warn: (msg, fields) => log("warn", msg, fields),
    error: (msg, fields) => log("error", msg, fields),
    child: (fields) => createLogger(level, { ...base, ...fields }, write),
  };
}

/**
 * N3: the database error in `error` or its causes, if any. drizzle puts the SQL text and the
 * parameters in its message; postgres.js puts them on a query error (`query`, `parameters`) and
 * often a value in the server's message (`invalid input syntax for type integer: "…"`).
 */
function databaseErrorIn(error: unknown): LogFields | undefined {
  const chain: Error[] = [];
  for (let link = error; link instanceof Error && chain.length < 10; link = link.cause) {
    if (chain.includes(link)) break;
    chain.push(link);
  }
  const isDatabase = (link: Error) =>
    link instanceof DrizzleQueryError || link.name === "PostgresError" || "query" in link;
  if (!chain.some(isDatabase)) return undefined;
  // The innermost code is the driver's: a SQLSTATE, or its own name for a connection failure.
  const code = chain
    .map((link) => (link as { code?: unknown }).code)
    .findLast((value) => typeof value === "string" || typeof value === "number");
  const name = chain.findLast(isDatabase)?.name ?? "Error";
  return { error: "database error", error_name: name, ...(code ? { error_code: code } : {}) };
}

/**
 * The parts of an unexpected error worth logging. A database error is logged by its code alone
 * (N3): never SQL text, parameters, or the connection string.
 */
export function describeError(error: unknown): LogFields {
  const database = databaseErrorIn(error);
  if (database) return database;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { error: error.message, error_name: error.name, ...(code ? { error_code: code } : {}) };
  }
  return { error: String(error) };
}

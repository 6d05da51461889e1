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

/** One JSON object per line on stdout (O6); the sink is injectable so tests can read the lines. */
export function createLogger(
  level: LogLevel = "info",
  base: LogFields = {},
  write: LogSink = stdout,
): Logger {
  const min = rank[level];
  const log = (lvl: LogLevel, msg: string, fields?: LogFields) => {
    if (rank[lvl] < min) return;
    write(
      `${JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...base, ...fields })}\n`,
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

/** The parts of an unexpected error worth logging; never the SQL parameters or connection string. */
export function describeError(error: unknown): LogFields {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { error: error.message, error_name: error.name, ...(code ? { error_code: code } : {}) };
  }
  return { error: String(error) };
}

import { ConfigError } from "./env";
import { logsWritten } from "./log-output";
import { createLogger, describeError, type Logger } from "./logger";
import type { Metrics } from "./metrics";

/** Reads the configuration or stops the process with one line naming the bad variable. */
export function configOrExit<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`configuration error: ${error.message}\n`);
    process.exit(1);
  }
}

/** A start the service cannot get past, such as a wrong database password: already logged. */
export class StartFailed extends Error {}

/**
 * Builds the service, or stops the process (exit 1) when it cannot start: the reason is logged
 * as one JSON line before `StartFailed` is thrown, so the operator reads no stack.
 */
export async function serviceOrExit<T>(build: () => Promise<T>): Promise<T> {
  try {
    return await build();
  } catch (error) {
    if (!(error instanceof StartFailed)) throw error;
    await logsWritten(1000);
    process.exit(1);
  }
}

/** Runs shutdown steps in order; a step that fails is logged and the next one still runs. */
export async function runSteps(
  logger: Logger,
  steps: Array<[string, () => Promise<unknown> | unknown]>,
): Promise<void> {
  for (const [name, step] of steps) {
    const started = performance.now();
    try {
      await step();
    } catch (error) {
      logger.warn(`shutdown step failed: ${name}`, describeError(error));
    }
    // O7: where a shutdown's 10 s go, when it comes close.
    const ms = Math.round(performance.now() - started);
    if (ms >= 2000) logger.warn("shutdown step slow", { step: name, duration_ms: ms });
  }
}

/**
 * Graceful shutdown (O7): on SIGTERM or SIGINT run `stop` (stop accepting, finish in-flight
 * work, drain NATS, close the database) and exit 0; exit 1 if it takes over 10 s.
 */
export function onShutdown(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info("shutting down", { signal });
    const started = performance.now();
    const deadline = setTimeout(() => {
      logger.error("shutdown took longer than 10 s; exiting");
      process.exit(1);
    }, 9_500);
    await stop();
    clearTimeout(deadline);
    logger.info("stopped");
    // The last lines to a slow stdout: up to 1 s, and never past the 10 s.
    await logsWritten(Math.max(0, Math.min(1000, 9_800 - (performance.now() - started))));
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

/**
 * `<binary> --healthcheck`: asks the running service's own `/ready` and exits 0 or 1, so a
 * container without curl can be health-checked. Reads only PORT.
 */
export async function healthcheckIfAsked(defaultPort: number): Promise<void> {
  if (!process.argv.includes("--healthcheck")) return;
  const port = process.env.PORT || String(defaultPort);
  try {
    const response = await fetch(`http://127.0.0.1:${port}/ready`, {
      signal: AbortSignal.timeout(3000),
    });
    process.exit(response.ok ? 0 : 1);
  } catch {
    process.exit(1);
  }
}

/**
 * X2 (v5): an error nobody handled (a rejected promise without a handler, an exception thrown
 * from an event handler) is a defect, but never the end of the process: it is logged (the
 * error's name, message and code, never its stack) and counted in
 * `process_unhandled_errors_total`, and the service goes on. Installed first thing in `main.ts`,
 * before the database is opened; `attach` hands it the service's own logger and metrics once
 * the service exists. Until then such an error stops the process (exit 1) in one line: a start
 * that failed must not look like one that ended.
 */
export function keepRunningOnUnhandledErrors(service: string) {
  let logger: Logger = createLogger("error", { service });
  let count: ((kind: string) => void) | undefined;
  const report = (kind: "rejection" | "exception") => (error: unknown) => {
    if (!count) {
      // Before `attach` the service is not running yet: a start that failed this way (a rejected
      // top-level await) stops the process, as it would without this guard, in one line.
      logger.error(`${service} cannot start: unhandled ${kind}`, describeError(error));
      process.exit(1);
    }
    count(kind);
    logger.error(`unhandled ${kind}`, describeError(error));
  };
  process.on("unhandledRejection", report("rejection"));
  process.on("uncaughtException", report("exception"));
  return {
    attach(serviceLogger: Logger, metrics: Metrics) {
      logger = serviceLogger;
      const counter = metrics.counter(
        "process_unhandled_errors_total",
        "Errors no handler caught (a defect), logged and survived, by kind",
        ["kind"],
      );
      counter.inc({ kind: "rejection" }, 0);
      counter.inc({ kind: "exception" }, 0);
      count = (kind) => counter.inc({ kind });
    },
  };
}

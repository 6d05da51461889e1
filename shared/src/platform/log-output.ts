import { write, writeSync } from "node:fs";
import type { LogSink } from "./logger";

export type LogOutputOptions = {
  /** The file descriptor written (default 1, stdout). */
  fd?: number;
  /** Log text, in characters, held while the reader is behind; lines beyond it are dropped. */
  maxPending?: number;
  /** Called once per dropped line (the services count it: `log_lines_dropped_total`). */
  onDrop?: () => void;
};

/**
 * Log lines to stdout that cannot grow the process's memory without bound when the reader falls
 * behind (a log collector that stalls): the lines of one turn of the event loop go out as one
 * write, one write in flight at a time; while it waits, at most `maxPending` characters queue up
 * and later lines are dropped and counted. `process.stdout.write` instead buffers whatever the
 * pipe does not take, inside Bun, without telling (its `writableLength` stays 0).
 */
export function logOutput({ fd = 1, maxPending = 1 << 20, onDrop }: LogOutputOptions = {}) {
  let pending: string[] = [];
  let pendingLength = 0;
  let writing = false;
  let scheduled = false;
  let dropped = 0;
  const idle: (() => void)[] = [];

  const writeAll = (chunk: Buffer) =>
    write(fd, chunk, (error, written) => {
      if (error?.code === "EAGAIN") return void setTimeout(() => writeAll(chunk), 10);
      if (!error && written < chunk.length) return void writeAll(chunk.subarray(written));
      // Lines a closed or failing stdout did not take are lost like those dropped.
      writing = false;
      pump();
    });

  const pump = () => {
    scheduled = false;
    if (writing) return;
    if (pending.length === 0) {
      for (const resolve of idle.splice(0)) resolve();
      return;
    }
    const chunk = Buffer.from(pending.join(""));
    pending = [];
    pendingLength = 0;
    writing = true;
    writeAll(chunk);
  };

  const line: LogSink = (text) => {
    if (pendingLength + text.length > maxPending) {
      dropped++;
      onDrop?.();
      return;
    }
    pending.push(text);
    pendingLength += text.length;
    if (!writing && !scheduled) {
      scheduled = true;
      setImmediate(pump);
    }
  };

  /** Resolves once every line so far is written, or after `timeoutMs` (a stalled reader). */
  const flushed = (timeoutMs: number) =>
    writing || pending.length > 0
      ? new Promise<void>((resolve) => {
          idle.push(resolve);
          setTimeout(resolve, timeoutMs).unref();
        })
      : Promise.resolve();

  // Lines logged just before exit: written at once, unless a stalled write shows the reader
  // would block the exit.
  process.on("exit", () => {
    if (!writing && pending.length > 0) writeSync(fd, pending.join(""));
  });
  const output = { write: line, dropped: () => dropped, flushed };
  outputs.push(output);
  return output;
}

const outputs: { flushed(timeoutMs: number): Promise<void> }[] = [];

/** Before the process exits: every `logOutput`'s lines written, waiting at most `timeoutMs`. */
export const logsWritten = (timeoutMs = 1000) =>
  Promise.all(outputs.map((output) => output.flushed(timeoutMs)));

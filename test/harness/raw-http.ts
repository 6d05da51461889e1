import { connect } from "node:net";

/**
 * A client that hangs up mid-request: on a raw socket, the request head and half of `body`
 * (declared whole by Content-Length, or as one chunk of a chunked body), a pause so the server
 * starts reading, then the socket destroyed.
 */
export function hangUpMidBody(
  port: number,
  path: string,
  body: string,
  { headers = {}, chunked = false }: { headers?: Record<string, string>; chunked?: boolean } = {},
): Promise<void> {
  const half = body.slice(0, Math.floor(body.length / 2));
  const head = [
    `POST ${path} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    "Content-Type: application/json",
    chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${Buffer.byteLength(body)}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ].join("\r\n");
  const sent = chunked ? `${Buffer.byteLength(half).toString(16)}\r\n${half}\r\n` : half;
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () =>
      socket.write(`${head}\r\n\r\n${sent}`, () =>
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 100),
      ),
    );
    socket.on("error", reject);
  });
}

export type RawAnswer = { status: number; headers: Record<string, string>; body: string };

/**
 * One request written on a raw socket exactly as given (a target or a `Host` that `fetch` would
 * refuse or rewrite), and its answer, read until the server closes the connection.
 */
export function rawRequest(
  port: number,
  method: string,
  target: string,
  headers: Record<string, string>,
): Promise<RawAnswer> {
  const head = [
    `${method} ${target} HTTP/1.1`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    "Connection: close",
  ].join("\r\n");
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, "127.0.0.1", () => socket.write(`${head}\r\n\r\n`));
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const split = text.indexOf("\r\n\r\n");
      const [statusLine, ...lines] = text.slice(0, split).split("\r\n");
      const answerHeaders: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        answerHeaders[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({
        status: Number(statusLine.split(" ")[1]),
        headers: answerHeaders,
        body: text.slice(split + 4),
      });
    });
  });
}

/** What a server answered on a raw socket: nothing at all when it closed without a byte. */
export type RawHead = {
  /** Everything the server wrote, as text. */
  raw: string;
  status?: number;
  /** Header names lower-cased. */
  headers: Record<string, string>;
  body: string;
};

/**
 * Writes `head` (the request line and header lines, without the blank line that ends them)
 * byte for byte, as no HTTP client would, with `Connection: close`; reads until the server
 * closes, or `timeoutMs` passes.
 */
export function rawHead(port: number, head: string, timeoutMs = 5000): Promise<RawHead> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect(port, "127.0.0.1", () =>
      socket.write(`${head}\r\nConnection: close\r\n\r\n`),
    );
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", (error: NodeJS.ErrnoException) => {
      // A server that hangs up on a request it refuses may reset the connection.
      if (error.code !== "ECONNRESET") reject(error);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks).toString("utf8");
      const split = raw.indexOf("\r\n\r\n");
      const [statusLine = "", ...lines] = (split < 0 ? raw : raw.slice(0, split)).split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(":");
        if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1];
      resolve({
        raw,
        status: status ? Number(status) : undefined,
        headers,
        body: split < 0 ? "" : raw.slice(split + 4),
      });
    });
  });
}

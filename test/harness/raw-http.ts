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

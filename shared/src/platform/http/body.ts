import {
  ClientClosedError,
  HttpError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
} from "../errors";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Strict JSON from raw bytes: undefined unless they are UTF-8 and JSON (no U+FFFD substitutes). */
export function parseJsonBytes(bytes: Uint8Array): { text: string; value: unknown } | undefined {
  try {
    const text = utf8.decode(bytes);
    return { text, value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

export function assertContentLength(request: Request, limitBytes: number): void {
  const declared = Number(request.headers.get("content-length") ?? 0);
  if (declared > limitBytes) throw new PayloadTooLargeError(limitBytes);
}

export function assertJsonContentType(contentType: string | null): void {
  const mediaType = (contentType ?? "").split(";")[0].trim().toLowerCase();
  if (mediaType !== "application/json") throw new UnsupportedMediaTypeError();
}

/**
 * The raw body, 413 past `limitBytes`: first by the declared Content-Length, then by the bytes
 * actually read, stopping as soon as they pass the limit (a chunked flood is never buffered).
 * A client that hangs up before the whole body arrived is a ClientClosedError (N3), not a 500.
 */
export async function readBodyWithin(request: Request, limitBytes: number): Promise<Uint8Array> {
  try {
    return await readBody(request, limitBytes);
  } catch (error) {
    if (error instanceof HttpError) throw error;
    // Bun rejects the read with an AbortError ("The connection was closed.") and aborts the signal.
    if (request.signal.aborted || (error instanceof Error && error.name === "AbortError"))
      throw new ClientClosedError();
    throw error;
  }
}

async function readBody(request: Request, limitBytes: number): Promise<Uint8Array> {
  assertContentLength(request, limitBytes);
  // A declared length frames the body: read it whole (cheaper than a stream), then make sure.
  if (request.headers.has("content-length")) {
    const body = new Uint8Array(await request.arrayBuffer());
    if (body.byteLength > limitBytes) throw new PayloadTooLargeError(limitBytes);
    return body;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body ?? []) {
    size += chunk.byteLength;
    if (size > limitBytes) throw new PayloadTooLargeError(limitBytes);
    chunks.push(chunk);
  }
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

/** Whether the request says it carries a body at all. */
export const hasBody = (request: Request) =>
  request.headers.has("content-type") ||
  request.headers.has("transfer-encoding") ||
  Number(request.headers.get("content-length") ?? 0) > 0;

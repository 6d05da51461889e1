import http from "node:http";
import https from "node:https";
import {
  type AddressPolicy,
  BlockedAddressError,
  guardedLookup,
  literalAddressRefused,
  protocolRefusal,
} from "./address-guard";
import { keptBytes, readableText } from "./response-text";

/** What one attempt came to (H4): the receiver's status and first KiB, or why there was none. */
export type AttemptResult = {
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string | null;
};

/** The attempt log's `error` for a failure before or instead of an answer. */
function errorName(error: unknown): string {
  if (error instanceof BlockedAddressError) return "blocked_address";
  const code = (error as { code?: string })?.code ?? "";
  if (code === "ECONNREFUSED") return "connection_refused";
  if (code === "ECONNRESET" || code === "EPIPE") return "connection_reset";
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return "dns_failure";
  if (code.startsWith("ERR_TLS") || code.includes("CERT")) return "tls_error";
  return "network_error";
}

/**
 * H3, H7: one POST to the endpoint. No redirect is followed (node's client never does; a 3xx is
 * a failed attempt), the connection goes only to an address checked at this connection, and the
 * whole attempt, answer included, ends at `timeoutMs`.
 */
export function sendDelivery(
  target: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  policy: AddressPolicy,
): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const url = new URL(target);
  // H7: an http endpoint saved while WEBHOOK_ALLOW_HTTP=1 is not delivered to in clear after.
  if (protocolRefusal(url, policy))
    return Promise.resolve({
      statusCode: null,
      durationMs: 0,
      error: "blocked_protocol",
      responseBody: null,
    });
  if (literalAddressRefused(url, policy))
    return Promise.resolve({
      statusCode: null,
      durationMs: 0,
      error: "blocked_address",
      responseBody: null,
    });
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: Omit<AttemptResult, "durationMs">) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve({ ...result, durationMs: elapsed() });
    };
    const client = url.protocol === "https:" ? https : http;
    const request = client.request(
      url,
      {
        method: "POST",
        headers: {
          ...headers,
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(body)),
          "user-agent": "commerce-webhooks/1",
        },
        lookup: guardedLookup(policy) as never,
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () =>
          finish({
            statusCode: response.statusCode ?? null,
            error: null,
            // H9: at most the first KiB is kept and read, and the answer is not read further.
            responseBody: readableText(Buffer.concat(chunks)),
          });
        response.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= keptBytes) done();
        });
        response.on("end", done);
        response.on("error", done);
      },
    );
    const timer = setTimeout(
      () => finish({ statusCode: null, error: "timeout", responseBody: null }),
      timeoutMs,
    );
    request.on("error", (error) =>
      finish({ statusCode: null, error: errorName(error), responseBody: null }),
    );
    request.end(body);
  });
}

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";

/**
 * A fault the next request to a provider's refund route meets (B5, F3). `made` says whether the
 * provider carried the request out before the fault, so a test can lose an answer after the
 * refund was made: that is the case an idempotency key exists for.
 */
export type ProviderFault =
  /** The answer is held `ms` (default 60 s): the caller's timeout fires first. */
  | { kind: "timeout"; ms?: number; made?: boolean }
  /** The connection is destroyed without an answer. */
  | { kind: "reset"; made?: boolean }
  /**
   * An error status. `stored`: the provider began to execute and keeps this answer for the key
   * (Stripe replays a stored 500 for the same key); otherwise nothing is kept (a front end's 503,
   * a rate limit), and the next attempt with the key runs afresh.
   */
  | { kind: "status"; status: number; stored?: boolean; made?: boolean };

/** What a provider's route answers: status, JSON body, headers. */
export type Answer = { status: number; body: unknown; headers?: Record<string, string> };

/** One request as the provider saw it, for a test to read (the key of every attempt). */
export type SeenRequest = {
  method: string;
  path: string;
  idempotencyKey: string | null;
  credential: string | null;
  body: string;
  at: number;
};

type Stored = { fingerprint: string; answer: Answer } | { fingerprint: string; inProgress: true };

/**
 * The parts both local provider servers share: a node:http server on loopback (so a fault can
 * reset a connection), the faults queued for the next requests, the requests seen, and the
 * idempotency store: a key's first executed answer is kept and replayed, a key reused with other
 * parameters or while its first request runs is refused, as the providers document.
 */
export class ProviderServer {
  readonly seen: SeenRequest[] = [];
  private readonly faults: ProviderFault[] = [];
  private readonly keys = new Map<string, Stored>();
  private server = createServer((request, response) => void this.serve(request, response));
  url = "";

  constructor(
    private readonly route: (request: {
      method: string;
      path: string;
      /** The query string's parameters (Stripe's list filters, B1). */
      query: URLSearchParams;
      body: string;
      headers: IncomingMessage["headers"];
    }) => Promise<Answer | undefined> | Answer | undefined,
    private readonly options: {
      /** The header that carries the caller's credential. */
      credentialOf: (headers: IncomingMessage["headers"]) => string | null;
      /** The answer when a key is reused with other parameters, or while its first runs. */
      keyMisuse: (what: "other_parameters" | "in_progress") => Answer;
      /** Whether a path's POST is an idempotent, fault-injectable money move. */
      moves: (path: string) => boolean;
    },
  ) {}

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    const { port } = this.server.address() as { port: number };
    this.url = `http://127.0.0.1:${port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  /** Queues faults for the next money-moving requests, one each, in order. */
  fail(...faults: ProviderFault[]): void {
    this.faults.push(...faults);
  }

  /** The money-moving requests seen, oldest first. */
  moves(): SeenRequest[] {
    return this.seen.filter((r) => r.method === "POST" && this.options.moves(r.path));
  }

  private async serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const method = request.method ?? "GET";
    const [path, search = ""] = (request.url ?? "/").split("?");
    const key = headerOf(request.headers, "idempotency-key");
    this.seen.push({
      method,
      path,
      idempotencyKey: key,
      credential: this.options.credentialOf(request.headers),
      body,
      at: Date.now(),
    });
    const call = {
      method,
      path,
      query: new URLSearchParams(search),
      body,
      headers: request.headers,
    };
    const moves = method === "POST" && this.options.moves(path);
    if (!moves) return send(response, (await this.route(call)) ?? notFound);

    const fingerprint = `${path} ${canonical(body)}`;
    const scope = key === null ? undefined : `${this.options.credentialOf(request.headers)} ${key}`;
    const stored = scope === undefined ? undefined : this.keys.get(scope);
    if (stored) {
      if (stored.fingerprint !== fingerprint)
        return send(response, this.options.keyMisuse("other_parameters"));
      if ("inProgress" in stored) return send(response, this.options.keyMisuse("in_progress"));
      return send(response, {
        ...stored.answer,
        headers: { ...stored.answer.headers, "idempotent-replayed": "true" },
      });
    }

    const fault = this.faults.shift();
    const made = fault?.made ?? (fault?.kind === "timeout" || fault?.kind === "reset");
    if (fault?.kind === "status" && !fault.stored && !made)
      return send(response, { status: fault.status, body: statusBody(fault.status) });
    if (scope) this.keys.set(scope, { fingerprint, inProgress: true });
    let answer: Answer | undefined;
    if (fault === undefined || made) answer = (await this.route(call)) ?? notFound;
    if (fault?.kind === "status") answer = { status: fault.status, body: statusBody(fault.status) };
    // A request that failed validation keeps nothing (the providers save only what executed).
    const keep = answer && (answer.status < 400 || answer.status >= 500 || fault !== undefined);
    if (scope) {
      if (answer && keep) this.keys.set(scope, { fingerprint, answer });
      else this.keys.delete(scope);
    }
    if (fault?.kind === "timeout") {
      await Bun.sleep(fault.ms ?? 60_000);
      if (!response.destroyed) send(response, answer ?? notFound);
      return;
    }
    if (fault?.kind === "reset") {
      request.socket.destroy();
      return;
    }
    send(response, answer ?? notFound);
  }
}

const notFound: Answer = { status: 404, body: { error: "not found" } };

const statusBody = (status: number) => ({
  error: { type: "api_error", message: `Injected fault: ${status}` },
  status,
  errorCode: String(status),
  message: `Injected fault: ${status}`,
  errorType: "internal",
});

function send(response: ServerResponse, answer: Answer): void {
  if (response.destroyed) return;
  const text = JSON.stringify(answer.body);
  response.writeHead(answer.status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...answer.headers,
  });
  response.end(text);
}

export const headerOf = (headers: IncomingMessage["headers"], name: string): string | null => {
  const value = headers[name];
  return typeof value === "string" ? value : (value?.[0] ?? null);
};

/** A body compared as parameters (a form's or JSON's key order does not matter). */
function canonical(body: string): string {
  const trimmed = body.trim();
  if (trimmed.startsWith("{")) {
    try {
      return JSON.stringify(sortKeys(JSON.parse(trimmed)));
    } catch {
      return trimmed;
    }
  }
  return [...new URLSearchParams(trimmed).entries()]
    .map(([k, v]) => `${k}=${v}`)
    .sort()
    .join("&");
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => [k, sortKeys(v)]),
  );
}

export const randomId = (prefix: string) =>
  `${prefix}_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
